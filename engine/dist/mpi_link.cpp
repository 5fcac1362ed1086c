// engine/dist/mpi_link.cpp — RankLink over MPI (compiled only with STRATA_MPI). Three duplicated
// communicators keep traffic apart: data (messages of the engine), heartbeat (liveness), and the
// groups split for all-reduce. Every wait polls (MPI_Test / MPI_Improbe) so that it can give up on a
// rank whose heartbeats stopped: a dead peer never completes a request, and OpenMPI (started with
// --enable-recovery) keeps the others running but reports nothing to them.
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "engine/dist/rank_link.h"

namespace strata::dist {

namespace {

constexpr int kHeartbeatTag = 1;

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Between polls: spin briefly (a reply is often microseconds away), then sleep a little so that
// an idle wait does not take a core from the ranks that compute.
class Backoff {
 public:
  void pause() {
    if (++polls_ < 200) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(polls_ < 2000 ? 20 : 200));
    }
  }

 private:
  int polls_ = 0;
};

class MpiLink final : public RankLink {
 public:
  MpiLink(int64_t heartbeat_ms, int64_t dead_after_ms) : heartbeat_ms_(heartbeat_ms), dead_after_ms_(dead_after_ms) {}
  ~MpiLink() override { finish(); }

  Status init() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
        return Error{Code::Device, "MPI_Init_thread failed"};
      if (provided < MPI_THREAD_MULTIPLE)
        return Error{Code::Unsupported, "this MPI library does not provide MPI_THREAD_MULTIPLE (got level " +
                                            std::to_string(provided) + ")"};
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm_dup(MPI_COMM_WORLD, &data_);
    MPI_Comm_dup(MPI_COMM_WORLD, &beat_);
    MPI_Comm_set_errhandler(data_, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(beat_, MPI_ERRORS_RETURN);
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    MPI_Get_processor_name(name, &len);
    host_.assign(name, static_cast<size_t>(std::max(0, len)));
    const int64_t now = steady_ms();
    last_seen_.assign(static_cast<size_t>(size_), now);
    lost_.assign(static_cast<size_t>(size_), std::string());
    beat_in_.assign(static_cast<size_t>(size_), MPI_REQUEST_NULL);
    beat_out_.assign(static_cast<size_t>(size_), MPI_REQUEST_NULL);
    beat_buf_.assign(static_cast<size_t>(size_), 0);
    for (int r = 0; r < size_; ++r) {
      if (r != rank_) MPI_Irecv(&beat_buf_[static_cast<size_t>(r)], 1, MPI_BYTE, r, kHeartbeatTag, beat_, &beat_in_[static_cast<size_t>(r)]);
    }
    running_ = true;
    beat_thread_ = std::thread([this] { heartbeat_loop(); });
    return {};
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string host_name() const override { return host_; }

  Status send(int to, int tag, std::span<const uint8_t> bytes) override {
    if (to < 0 || to >= size_ || to == rank_) return Error{Code::InvalidArgument, "send to rank " + std::to_string(to)};
    if (bytes.size() > static_cast<size_t>(INT32_MAX)) return Error{Code::OutOfRange, "message over 2 GiB"};
    if (lost(to)) return lost_error(to);
    // The bytes live in a pending record: if the peer dies mid-send, MPI may still read them.
    auto pending = std::make_unique<Pending>();
    pending->bytes.assign(bytes.begin(), bytes.end());
    if (MPI_Isend(pending->bytes.data(), static_cast<int>(pending->bytes.size()), MPI_BYTE, to, tag, data_,
                  &pending->request) != MPI_SUCCESS)
      return Error{Code::Device, "MPI_Isend to rank " + std::to_string(to) + " failed"};
    Backoff backoff;
    while (true) {
      int done = 0;
      if (MPI_Test(&pending->request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        mark_lost(to, "a send to it failed");
        abandon(std::move(pending));
        return lost_error(to);
      }
      if (done) return {};
      if (lost(to)) {
        abandon(std::move(pending));
        return lost_error(to);
      }
      backoff.pause();
    }
  }

  Status send_async(int to, int tag, std::vector<uint8_t> bytes) override {
    if (to < 0 || to >= size_ || to == rank_) return Error{Code::InvalidArgument, "send to rank " + std::to_string(to)};
    if (bytes.size() > static_cast<size_t>(INT32_MAX)) return Error{Code::OutOfRange, "message over 2 GiB"};
    if (lost(to)) return lost_error(to);
    reap_posted();
    auto pending = std::make_unique<Pending>();
    pending->bytes = std::move(bytes);
    pending->to = to;
    if (MPI_Isend(pending->bytes.data(), static_cast<int>(pending->bytes.size()), MPI_BYTE, to, tag, data_,
                  &pending->request) != MPI_SUCCESS)
      return Error{Code::Device, "MPI_Isend to rank " + std::to_string(to) + " failed"};
    std::lock_guard<std::mutex> lock(mutex_);
    posted_.push_back(std::move(pending));
    return {};
  }

  Expected<RankMessage> receive(int from, int tag, int64_t timeout_ms) override {
    const int64_t deadline = timeout_ms < 0 ? INT64_MAX : steady_ms() + timeout_ms;
    Backoff backoff;
    while (true) {
      int found = 0;
      MPI_Message msg;
      MPI_Status st;
      if (MPI_Improbe(from < 0 ? MPI_ANY_SOURCE : from, tag < 0 ? MPI_ANY_TAG : tag, data_, &found, &msg, &st) !=
          MPI_SUCCESS)
        return Error{Code::Device, "MPI_Improbe failed"};
      if (found) {
        int count = 0;
        MPI_Get_count(&st, MPI_BYTE, &count);
        RankMessage out;
        out.source = st.MPI_SOURCE;
        out.tag = st.MPI_TAG;
        out.bytes.resize(static_cast<size_t>(count));
        const auto t0 = std::chrono::steady_clock::now();
        if (MPI_Mrecv(out.bytes.data(), count, MPI_BYTE, &msg, MPI_STATUS_IGNORE) != MPI_SUCCESS)
          return Error{Code::Device, "MPI_Mrecv from rank " + std::to_string(out.source) + " failed"};
        out.receive_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
        return out;
      }
      if (from >= 0 && lost(from)) return lost_error(from);
      if (from < 0) {
        for (int r = 0; r < size_; ++r) {
          if (r != rank_ && lost(r)) return lost_error(r);
        }
      }
      if (steady_ms() > deadline)
        return Error{Code::Cancelled, "no message from " + (from < 0 ? std::string("any rank") : "rank " + std::to_string(from)) +
                                          " within " + std::to_string(timeout_ms) + " ms"};
      backoff.pause();
    }
  }

  bool lost(int r) const override {
    if (r < 0 || r >= size_ || r == rank_) return false;
    std::lock_guard<std::mutex> lock(mutex_);
    return !lost_[static_cast<size_t>(r)].empty();
  }
  void mark_lost(int r, const std::string& why) override {
    if (r < 0 || r >= size_ || r == rank_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (lost_[static_cast<size_t>(r)].empty()) lost_[static_cast<size_t>(r)] = why;
  }
  std::string loss_reason(int r) const override {
    if (r < 0 || r >= size_) return {};
    std::lock_guard<std::mutex> lock(mutex_);
    return lost_[static_cast<size_t>(r)];
  }

  Expected<int> make_group(const std::vector<int>& ranks, int tag) override {
    if (std::find(ranks.begin(), ranks.end(), rank_) == ranks.end())
      return Error{Code::InvalidArgument, "rank " + std::to_string(rank_) + " is not in the group it makes"};
    for (int r : ranks) {
      if (lost(r)) return lost_error(r);
    }
    MPI_Group world_group, group;
    MPI_Comm_group(data_, &world_group);
    MPI_Group_incl(world_group, static_cast<int>(ranks.size()), ranks.data(), &group);
    MPI_Comm comm = MPI_COMM_NULL;
    const int rc = MPI_Comm_create_group(data_, group, tag, &comm);
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
    if (rc != MPI_SUCCESS || comm == MPI_COMM_NULL) return Error{Code::Device, "MPI_Comm_create_group failed"};
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    std::lock_guard<std::mutex> lock(mutex_);
    groups_.push_back({comm, ranks});
    return static_cast<int>(groups_.size() - 1);
  }

  Status all_reduce_sum(int group, float* data, size_t n) override {
    Group g;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (group < 0 || static_cast<size_t>(group) >= groups_.size())
        return Error{Code::InvalidArgument, "no rank group " + std::to_string(group)};
      g = groups_[static_cast<size_t>(group)];
    }
    for (int r : g.ranks) {
      if (lost(r)) return lost_error(r);
    }
    MPI_Request req;
    if (MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_FLOAT, MPI_SUM, g.comm, &req) != MPI_SUCCESS)
      return Error{Code::Device, "MPI_Iallreduce failed"};
    Backoff backoff;
    while (true) {
      int done = 0;
      if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return Error{Code::Device, "MPI_Iallreduce failed"};
      if (done) return {};
      for (int r : g.ranks) {
        // The request is left behind: the group is unusable once a member is lost.
        if (lost(r)) return lost_error(r);
      }
      backoff.pause();
    }
  }

  void finish() override {
    if (!running_.exchange(false)) return;
    if (beat_thread_.joinable()) beat_thread_.join();
    bool any_lost = false;
    for (int r = 0; r < size_; ++r) any_lost = any_lost || lost(r);
    if (any_lost) return;  // MPI_Finalize would wait for the lost rank
    // Outstanding sends (heartbeats, send_async) complete once their receivers take them. One that
    // does not within the heartbeat's dead time (a rank that died unnoticed, a message nobody took
    // after its micro-batch failed elsewhere) would hold MPI_Finalize forever: the process then
    // leaves MPI unfinalized, as with a lost rank.
    for (MPI_Request& q : beat_in_) {
      if (q != MPI_REQUEST_NULL) MPI_Cancel(&q);
    }
    const int64_t give_up = steady_ms() + dead_after_ms_;
    while (true) {
      reap_posted();
      bool pending = false;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        pending = !posted_.empty();
      }
      // Heartbeats in (cancelled above) and out: a completed request becomes MPI_REQUEST_NULL.
      for (std::vector<MPI_Request>* requests : {&beat_in_, &beat_out_}) {
        for (MPI_Request& q : *requests) {
          int done = 0;
          if (q != MPI_REQUEST_NULL) MPI_Test(&q, &done, MPI_STATUS_IGNORE);
          pending = pending || q != MPI_REQUEST_NULL;
        }
      }
      if (!pending) break;
      if (steady_ms() > give_up) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    for (Group& g : groups_) MPI_Comm_free(&g.comm);
    groups_.clear();
    MPI_Comm_free(&data_);
    MPI_Comm_free(&beat_);
    MPI_Finalize();
  }

 private:
  struct Pending {
    std::vector<uint8_t> bytes;
    MPI_Request request = MPI_REQUEST_NULL;
    int to = -1;  // send_async: the receiver
  };

  // Releases the send_async sends that completed; those to a lost rank go to abandoned_ (MPI may
  // still read their bytes).
  void reap_posted() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = posted_.begin(); it != posted_.end();) {
      int done = 0;
      const bool failed = MPI_Test(&(*it)->request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS;
      if (done) {
        it = posted_.erase(it);
      } else if (failed || !lost_[static_cast<size_t>((*it)->to)].empty()) {
        abandoned_.push_back(std::move(*it));
        it = posted_.erase(it);
      } else {
        ++it;
      }
    }
  }
  struct Group {
    MPI_Comm comm = MPI_COMM_NULL;
    std::vector<int> ranks;
  };

  Error lost_error(int r) const {
    return Error{Code::Device, "rank " + std::to_string(r) + " is lost: " + loss_reason(r)};
  }
  void abandon(std::unique_ptr<Pending> p) {
    std::lock_guard<std::mutex> lock(mutex_);
    abandoned_.push_back(std::move(p));
  }

  // Sends a heartbeat to every live rank each heartbeat_ms and takes in theirs; a rank silent for
  // dead_after_ms is lost. Two things that are not a peer's silence are kept out of the count:
  // - at most one beat per peer is in flight: a beat to a peer that has not taken the last one
  //   (dead, or its socket backed up) is not posted again, so a dead peer does not gather a send
  //   (and, in OpenMPI's TCP transport, a reconnect attempt) every heartbeat_ms while this thread
  //   should be beating to the live ones;
  // - time this thread itself did not poll (descheduled on a loaded machine, or held inside an MPI
  //   call) is added to every peer's last-seen time: beats that arrived meanwhile are only read now,
  //   and a stall here says nothing about the peers.
  void heartbeat_loop() {
    static const uint8_t beat = 1;
    const int64_t poll_ms = std::max<int64_t>(1, heartbeat_ms_ / 4);
    int64_t next_send = 0;
    int64_t previous = steady_ms();
    while (running_) {
      const int64_t now = steady_ms();
      const int64_t blind = now - previous - poll_ms;
      previous = now;
      if (blind > heartbeat_ms_) {
        for (int64_t& seen : last_seen_) seen += blind;
      }
      if (now >= next_send) {
        next_send = now + heartbeat_ms_;
        for (int r = 0; r < size_; ++r) {
          if (r == rank_) continue;
          MPI_Request& out = beat_out_[static_cast<size_t>(r)];
          if (out != MPI_REQUEST_NULL) {
            int done = 0;
            MPI_Test(&out, &done, MPI_STATUS_IGNORE);  // a completed request becomes MPI_REQUEST_NULL
          }
          // One to a lost rank never completes and stays.
          if (out == MPI_REQUEST_NULL && !lost(r)) MPI_Isend(&beat, 1, MPI_BYTE, r, kHeartbeatTag, beat_, &out);
        }
        reap_posted();
      }
      for (int r = 0; r < size_; ++r) {
        MPI_Request& q = beat_in_[static_cast<size_t>(r)];
        if (q == MPI_REQUEST_NULL) continue;
        int done = 0;
        MPI_Test(&q, &done, MPI_STATUS_IGNORE);
        while (done) {
          last_seen_[static_cast<size_t>(r)] = now;
          MPI_Irecv(&beat_buf_[static_cast<size_t>(r)], 1, MPI_BYTE, r, kHeartbeatTag, beat_, &q);
          done = 0;
          MPI_Test(&q, &done, MPI_STATUS_IGNORE);
        }
        const int64_t silent = now - last_seen_[static_cast<size_t>(r)];
        if (silent > dead_after_ms_ && !lost(r))
          mark_lost(r, "no heartbeat for " + std::to_string(silent) + " ms (the process ended or its host is unreachable)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
    }
  }

  int64_t heartbeat_ms_, dead_after_ms_;
  int rank_ = 0, size_ = 1;
  std::string host_;
  MPI_Comm data_ = MPI_COMM_NULL, beat_ = MPI_COMM_NULL;
  mutable std::mutex mutex_;
  std::vector<std::string> lost_;    // per rank: why it is lost, empty while alive
  std::vector<Group> groups_;
  std::vector<std::unique_ptr<Pending>> abandoned_;  // sends to lost ranks: MPI may still hold them
  std::deque<std::unique_ptr<Pending>> posted_;      // send_async sends not yet complete
  // Heartbeat thread only:
  std::vector<int64_t> last_seen_;   // per rank, steady ms
  std::vector<MPI_Request> beat_in_;
  std::vector<uint8_t> beat_buf_;
  std::vector<MPI_Request> beat_out_;  // per rank: the beat in flight to it, or MPI_REQUEST_NULL
  std::atomic<bool> running_{false};
  std::thread beat_thread_;
};

}  // namespace

bool RankLink::compiled() { return true; }

Expected<std::unique_ptr<RankLink>> RankLink::start(int64_t heartbeat_ms, int64_t dead_after_ms) {
  auto link = std::make_unique<MpiLink>(heartbeat_ms, dead_after_ms);
  STRATA_RETURN_IF_ERROR(link->init());
  return std::unique_ptr<RankLink>(std::move(link));
}

}  // namespace strata::dist
