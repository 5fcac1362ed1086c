// app/engine_cli/ranks.cpp — the mpirun side of strata-engine (see ranks.h).
#include "app/engine_cli/ranks.h"

#include <csignal>
#include <cstdio>
#include <map>

#include "engine/backend/cpu/cpu_speed.h"
#include "engine/backend/registry/registry.h"

namespace strata::cli {

namespace {
RankContext* g_context = nullptr;  // owned here from start_ranks to finish_ranks

struct Registered {
  const ModelOptions* model = nullptr;
  const std::string* devices = nullptr;
  const std::vector<std::string>* model_on_rank = nullptr;
  const std::string* rank_fault = nullptr;
};
std::map<const CLI::App*, Registered>& registry() {
  static std::map<const CLI::App*, Registered> r;
  return r;
}

Expected<std::vector<std::unique_ptr<backend::Device>>> local_devices(dist::RankLink& link, const std::string& spec,
                                                                   int threads, const CpuSpeed& cpu_bw) {
  STRATA_ASSIGN_OR_RETURN(std::string mine, dist::rank_devices_spec(spec, link.rank(), link.size()));
  std::vector<std::unique_ptr<backend::Device>> devices;
  if (!mine.empty()) {
    STRATA_ASSIGN_OR_RETURN(devices, backend::make_devices(mine, threads, cpu_bw));
  }
  for (auto& d : devices) d->set_rank(link.rank(), link.host_name());
  return devices;
}
}  // namespace

RankContext* rank_context() { return g_context; }

Status start_ranks() {
  if (!dist::RankLink::launched_with_ranks()) return {};
  if (!dist::RankLink::compiled())
    return Error{Code::NotCompiled, "started by mpirun with several processes, but built without MPI "
                                    "(install libopenmpi-dev and configure with STRATA_MPI=ON)"};
  STRATA_ASSIGN_OR_RETURN(auto link, dist::RankLink::start());
  if (link->size() < 2) {
    link->finish();
    return {};
  }
  g_context = new RankContext;
  g_context->link = std::move(link);
  return {};
}

void finish_ranks() {
  if (!g_context) return;
  if (g_context->cluster) g_context->cluster->stop_workers();
  else dist::stop_rank_workers(*g_context->link);
  g_context->cluster.reset();
  g_context->link->finish();
  delete g_context;
  g_context = nullptr;
}

void register_model_options(const CLI::App& cmd, const ModelOptions* options) { registry()[&cmd].model = options; }

void register_devices_option(const CLI::App& cmd, const std::string* devices, const std::vector<std::string>* model_on_rank,
                             const std::string* rank_fault) {
  registry()[&cmd].devices = devices;
  registry()[&cmd].model_on_rank = model_on_rank;
  registry()[&cmd].rank_fault = rank_fault;
}

Expected<int64_t> crash_after_for_rank(const std::string& fault, int rank) {
  if (fault.empty()) return int64_t{-1};
  // "R:crash_after=N"
  const size_t colon = fault.find(':'), eq = fault.find('=');
  const std::string bad = "--rank-fault '" + fault + "': expected R:crash_after=CALLS, e.g. 1:crash_after=8";
  if (colon == std::string::npos || eq == std::string::npos || eq < colon ||
      fault.substr(colon + 1, eq - colon - 1) != "crash_after")
    return Error{Code::InvalidArgument, bad};
  try {
    const int r = std::stoi(fault.substr(0, colon));
    const long long n = std::stoll(fault.substr(eq + 1));
    if (r < 1 || n < 0) return Error{Code::InvalidArgument, bad + " (a worker rank >= 1, calls >= 0)"};
    return r == rank ? static_cast<int64_t>(n) : int64_t{-1};
  } catch (...) {
    return Error{Code::InvalidArgument, bad};
  }
}

Expected<std::string> model_for_rank(const std::vector<std::string>& entries, int rank) {
  for (const std::string& e : entries) {
    const size_t eq = e.find('=');
    int r = -1;
    try {
      r = eq == std::string::npos ? -1 : std::stoi(e.substr(0, eq));
    } catch (...) {
      r = -1;
    }
    if (r < 0 || eq + 1 >= e.size())
      return Error{Code::InvalidArgument, "--model-on-rank '" + e + "': expected RANK=PATH, e.g. 1=/data/model.gguf"};
    if (r == rank) return e.substr(eq + 1);
  }
  return std::string();
}

Expected<std::vector<std::unique_ptr<backend::Device>>> connect_ranks(const std::string& spec, int threads, const CpuSpeed& cpu_bw) {
  RankContext* ctx = g_context;
  if (!ctx) return Error{Code::Internal, "connect_ranks without ranks"};
  STRATA_ASSIGN_OR_RETURN(auto devices, local_devices(*ctx->link, spec, threads, cpu_bw));
  std::vector<DeviceInfo> infos;
  for (const auto& d : devices) infos.push_back(d->info());
  if (!ctx->cluster) {
    STRATA_ASSIGN_OR_RETURN(ctx->cluster, dist::Cluster::connect(*ctx->link, infos));
  }
  for (auto& r : ctx->cluster->remote_devices()) devices.push_back(std::move(r));
  if (devices.empty()) return Error{Code::InvalidArgument, "no rank has a device"};
  return devices;
}

int run_worker(const CLI::App& cmd) {
  RankContext* ctx = g_context;
  const Registered reg = registry().count(&cmd) ? registry()[&cmd] : Registered{};
  ModelOptions mo;
  if (reg.model) mo = *reg.model;
  const std::string spec = reg.devices ? *reg.devices : std::string();
  const int threads = resolve_threads(mo.threads);
  auto fail = [&](const Error& e) {
    std::fprintf(stderr, "rank %d: ", ctx->link->rank());
    return report(e);
  };
  const CpuSpeed cpu_bw = backend::cpu_speed(threads, /*refresh=*/false).speed;
  auto devices = local_devices(*ctx->link, spec, threads, cpu_bw);
  if (!devices.ok()) return fail(devices.error());
  std::vector<DeviceInfo> infos;
  for (const auto& d : *devices) infos.push_back(d->info());
  auto cluster = dist::Cluster::connect(*ctx->link, infos);
  if (!cluster.ok()) return cluster.error().code == Code::Cancelled ? 0 : fail(cluster.error());
  std::vector<std::unique_ptr<backend::Device>> all = std::move(*devices);
  for (auto& r : (*cluster)->remote_devices()) all.push_back(std::move(r));
  std::vector<backend::Device*> list;
  for (const auto& d : all) list.push_back(d.get());
  std::unique_ptr<model::Model> model;
  auto load = [&]() -> Expected<const model::Model*> {
    if (model) return model.get();
    ModelOptions m = mo;
    if (reg.model_on_rank) {
      STRATA_ASSIGN_OR_RETURN(std::string path, model_for_rank(*reg.model_on_rank, ctx->link->rank()));
      if (!path.empty()) m.model = path;
    }
    STRATA_ASSIGN_OR_RETURN(model, load_model(m, /*remember=*/false));
    return model.get();
  };
  auto crash_after = crash_after_for_rank(reg.rank_fault ? *reg.rank_fault : std::string(), ctx->link->rank());
  if (!crash_after.ok()) return fail(crash_after.error());
  Status s = (*cluster)->serve(load, list, *crash_after);
  if (!s.ok() && *crash_after >= 0 && s.error().code == Code::Cancelled) {
    // The fault asked for: this rank dies as a crashed process would, without a word to the others.
    std::fprintf(stderr, "rank %d: %s\n", ctx->link->rank(), s.error().message.c_str());
    std::fflush(stderr);
    std::raise(SIGKILL);
  }
  if (!s.ok()) return fail(s.error());
  return 0;
}

}  // namespace strata::cli
