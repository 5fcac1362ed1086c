// engine/dist/rank_link.h — the processes of one `mpirun` job, as seen from one of them: rank, size,
// host names, byte messages between ranks and a float all-reduce over a group of ranks. MPI stays
// behind this header (engine/dist/mpi_link.cpp, compiled only with STRATA_MPI; mpi_link_stub.cpp
// otherwise, where start() says NotCompiled). Every wait has a deadline and a liveness check, so a
// rank that died is an error value (Code::Device) and never a hang.
// Threads: every call may be made from any thread (MPI_THREAD_MULTIPLE); the message order between
// two ranks is the order of the send calls.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace strata::dist {

struct RankMessage {
  int source = -1;
  int tag = -1;
  std::vector<uint8_t> bytes;
  int64_t receive_ns = 0;  // steady ns the bytes took to come in once the message was matched
};

class RankLink {
 public:
  virtual ~RankLink() = default;

  // Whether this build has MPI (STRATA_MPI found it).
  static bool compiled();
  // Whether this process was started by mpirun with more than one process (OMPI_COMM_WORLD_SIZE,
  // PMI_SIZE or PMIX/Hydra's variables > 1). Reads the environment only; MPI is not touched.
  static bool launched_with_ranks();
  // Initializes MPI (once per process) and returns the link. NotCompiled without MPI. The
  // heartbeat: every rank sends one to every other rank each heartbeat_ms; a rank not heard from
  // for dead_after_ms is lost (lost() names it and every wait on it fails).
  static Expected<std::unique_ptr<RankLink>> start(int64_t heartbeat_ms = 100, int64_t dead_after_ms = 3000);

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string host_name() const = 0;  // MPI_Get_processor_name

  // Sends bytes to rank `to` with `tag` (>= 16; lower tags are the link's own). Returns once the
  // bytes are handed over; Device error when `to` is lost or the send does not complete in time.
  virtual Status send(int to, int tag, std::span<const uint8_t> bytes) = 0;
  // Starts sending bytes to rank `to` with `tag` and returns at once (MPI_Isend): the link keeps the
  // bytes until the send completes, which needs the receiver to take it (it may be busy for a
  // while). Completed sends are released on later calls; one to a rank that is lost is dropped (the
  // receiver's wait fails on its own). Device error when `to` is already lost.
  virtual Status send_async(int to, int tag, std::vector<uint8_t> bytes) = 0;
  // Receives the next message from `from` (-1: any rank) with `tag` (-1: any tag >= 16). Waits
  // until one arrives, the sender is lost (Device), or timeout_ms passes (-1: no limit;
  // Cancelled when it passes).
  virtual Expected<RankMessage> receive(int from, int tag, int64_t timeout_ms = -1) = 0;

  // Whether a rank has stopped answering (its heartbeats stopped, or a message to it failed).
  virtual bool lost(int rank) const = 0;
  // Marks a rank lost by hand (a reply that made no sense); later waits on it fail at once.
  virtual void mark_lost(int rank, const std::string& why) = 0;
  virtual std::string loss_reason(int rank) const = 0;

  // A communicator over `ranks` (sorted, distinct, containing this rank) for all_reduce_sum. Every
  // rank in the list calls this with the same list and tag (MPI_Comm_create_group: the others
  // take no part, so a lost rank outside the group does not stop it).
  virtual Expected<int> make_group(const std::vector<int>& ranks, int tag) = 0;
  // MPI_Allreduce(SUM) of n floats in place over a group from make_group. Any rank of the group
  // that is lost makes this an error (the wait is bounded by the heartbeat).
  virtual Status all_reduce_sum(int group, float* data, size_t n) = 0;

  // Ends MPI. Without a lost rank: MPI_Finalize. With one, MPI_Finalize would wait for it forever,
  // so the process leaves MPI unfinalized (mpirun started with --enable-recovery reports it).
  virtual void finish() = 0;
};

// Round trips and one-way bandwidth between two ranks, measured with ping-pong at start-up.
struct LinkMeasure {
  double latency_us = 0;      // half the smallest round trip of a small message
  double bandwidth_gbps = 0;  // bytes / one-way time of a large message (1e9 bytes / s)
  int64_t clock_offset_ns = 0;  // the peer's steady clock minus this rank's, at the smallest round trip
};

// Ping-pong between this rank and `peer`, both calling it (the lower rank leads). tag: a free tag.
Expected<LinkMeasure> measure_link(RankLink& link, int peer, int tag);

}  // namespace strata::dist
