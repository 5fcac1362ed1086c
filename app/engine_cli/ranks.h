// app/engine_cli/ranks.h — strata-engine under mpirun: rank 0 runs the command (run, bench, serve,
// chat, devices) and drives the others; every other rank runs its devices for it (run_worker) and
// runs no command of its own. One process (no mpirun, or -np 1): none of this is active.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "app/engine_cli/common.h"
#include "engine/dist/rank_link.h"
#include "engine/dist/cluster.h"
#include "engine/backend/device.h"

namespace strata::cli {

struct RankContext {
  std::unique_ptr<dist::RankLink> link;
  std::unique_ptr<dist::Cluster> cluster;  // rank 0: made by connect_ranks
};

// The job's ranks when started by mpirun with more than one process, else null.
RankContext* rank_context();
// Starts MPI when mpirun started several processes (before the command runs). Errors: MPI would
// not start, or this build has no MPI (then the ranks would each run the command alone).
Status start_ranks();
// Rank 0 at the end: stops the workers and MPI. Every rank: ends MPI.
void finish_ranks();

// What a worker needs of a subcommand's options (registered by add_model_options and
// add_device_options, read by run_worker for the subcommand that was chosen).
void register_model_options(const CLI::App& cmd, const ModelOptions* options);
void register_devices_option(const CLI::App& cmd, const std::string* devices, const std::vector<std::string>* model_on_rank,
                             const std::string* rank_fault = nullptr);

// A worker rank: makes its devices, tells rank 0 about them, serves rank 0 until it stops.
// Returns the exit code.
int run_worker(const CLI::App& cmd);

// Rank 0: its devices (named "r0:..."), the others' stand-ins, the table of ranks. Collective with
// the workers (they are waiting in run_worker).
Expected<std::vector<std::unique_ptr<backend::Device>>> connect_ranks(const std::string& devices_spec, int threads,
                                                                   const CpuSpeed& cpu_speed);

// "--rank-fault R:crash_after=N" (fault injection): N for `rank`, -1 when it names another rank or
// is empty.
Expected<int64_t> crash_after_for_rank(const std::string& fault, int rank);

// "--model-on-rank R=PATH" entries: the path for `rank`, or "" when none names it.
Expected<std::string> model_for_rank(const std::vector<std::string>& entries, int rank);

}  // namespace strata::cli
