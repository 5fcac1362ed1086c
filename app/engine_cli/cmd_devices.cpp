// app/engine_cli/cmd_devices.cpp — `strata-engine devices`: what there is to place on. Per device its
// identity, compute capability (CUDA), memory total and free and declared speeds; which CUDA devices
// reach each other's memory directly; and what the CUDA runtime says. --json: the shape of
// GET /strata/v1/devices (engine/serve/device_json.h).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/engine_cli/commands.h"
#include "app/engine_cli/common.h"
#include "app/engine_cli/devices_table.h"
#include "app/engine_cli/ranks.h"
#include "engine/backend/device.h"
#include "engine/backend/registry/registry.h"
#include "engine/serve/device_json.h"
#include "engine/backend/cpu/cpu_speed.h"

namespace strata::cli {

namespace {

struct DevicesOptions {
  ModelOptions model;
  std::string devices;  // "" -> every hardware device found (CUDA), then the CPU
  bool json = false;
  bool measure_cpu = false;  // --measure-cpu: measure the CPU again and replace the cached figures
};

// The devices of an explicit --devices list (any entry that cannot be made is an error, as for run),
// or by default every CUDA device and then the CPU. In the default list a CUDA device that does not
// open is still listed, as failed and with the reason, so that `devices` shows what is wrong with it.
Expected<std::vector<DeviceInfo>> list_devices(const DevicesOptions& o) {
  const int threads = resolve_threads(o.model.threads);
  const backend::CpuSpeedResult measured = backend::cpu_speed(threads, o.measure_cpu);
  const CpuSpeed& cpu_bw = measured.speed;
  if (o.measure_cpu && !o.json) std::printf("cpu speed: %s\n", measured.note.c_str());
  std::vector<std::unique_ptr<backend::Device>> open;  // kept open until every info is read
  std::vector<DeviceInfo> failed;             // hardware devices that did not open, by ordinal
  if (RankContext* ranks = rank_context()) {
    // Every rank's devices, with the link to each measured at start-up.
    STRATA_ASSIGN_OR_RETURN(open, connect_ranks(o.devices, threads, cpu_bw));
    return ranks->cluster->all_devices();
  }
  if (!o.devices.empty()) {
    STRATA_ASSIGN_OR_RETURN(open, backend::make_devices(o.devices, threads, cpu_bw));
  } else {
    // Every backend that finds hardware lists what it found (a device that does not open is listed
    // as failed, with the reason), then the CPU.
    const backend::OpenOptions options{threads, cpu_bw};
    for (backend::Backend* b : backend::backends())
      if (b->finds_hardware()) b->probe(open, failed, options);
    STRATA_ASSIGN_OR_RETURN(auto cpu, backend::make_devices("cpu", threads, cpu_bw));
    for (auto& d : cpu) open.push_back(std::move(d));
  }
  std::vector<DeviceInfo> infos;
  for (const auto& d : open) infos.push_back(d->info());
  // Failed devices go back in ordinal order among their backend's devices (which come before the CPU).
  for (DeviceInfo& f : failed) {
    auto at = std::find_if(infos.begin(), infos.end(), [&](const DeviceInfo& i) {
      return i.backend != f.backend || i.ordinal > f.ordinal;
    });
    infos.insert(at, std::move(f));
  }
  return infos;
}

// Under mpirun: per rank its host and the link to rank 0 measured at start-up (ping-pong).
nlohmann::json ranks_json(const dist::Cluster& c) {
  nlohmann::json out = nlohmann::json::array();
  for (const dist::RankSummary& r : c.ranks())
    out.push_back({{"rank", r.rank},
                   {"host", r.host},
                   {"link_gbps", r.link.bandwidth_gbps},
                   {"link_latency_us", r.link.latency_us},
                   {"clock_offset_ns", r.link.clock_offset_ns}});
  return out;
}

std::string ranks_text(const dist::Cluster& c) {
  std::string out = "\nranks (link to rank 0 measured by ping-pong at start-up):\n| rank | host | link | latency |\n|---:|---|---:|---:|\n";
  for (const dist::RankSummary& r : c.ranks()) {
    char line[256];
    if (r.rank == 0) std::snprintf(line, sizeof line, "| 0 | %s | - | - |\n", r.host.c_str());
    else std::snprintf(line, sizeof line, "| %d | %s | %.2f GB/s | %.1f us |\n", r.rank, r.host.c_str(),
                       r.link.bandwidth_gbps, r.link.latency_us);
    out += line;
  }
  return out;
}

int devices_command(const DevicesOptions& o) {
  auto infos = list_devices(o);
  if (!infos.ok()) return report(infos.error());
  const dist::Cluster* cluster = rank_context() ? rank_context()->cluster.get() : nullptr;
  if (o.json) {
    nlohmann::json j = serve::devices_json(*infos);
    if (cluster) j["ranks"] = ranks_json(*cluster);
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::vector<HardwareBackendLine> lines;
  for (const backend::Backend* b : backend::backends())
    if (b->finds_hardware()) lines.push_back({b->name(), b->describe(), b->device_count()});
  std::string text = format_devices_text(*infos, lines);
  if (cluster) text += ranks_text(*cluster);
  std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace

Command add_devices_command(CLI::App& app) {
  auto o = std::make_shared<DevicesOptions>();
  CLI::App* cmd = app.add_subcommand("devices", "list the devices (CPU, simulated, CUDA)");
  cmd->add_option("--devices", o->devices,
                  "as for run: cpu,cuda,cuda:N,sim:gpu0:24GiB,... (default: every CUDA device, then the CPU)");
  cmd->add_option("-t,--threads", o->model.threads, "CPU threads")->check(CLI::Range(0, 1024));
  register_model_options(*cmd, &o->model);
  register_devices_option(*cmd, &o->devices, nullptr);
  cmd->add_flag("--measure-cpu", o->measure_cpu,
                "measure the CPU's read bandwidth and product rates again and replace the cached figures the planner uses");
  cmd->add_flag("--json", o->json, "print JSON: {\"devices\": [...], \"cuda\": {compiled, description, device_count}}");
  return [o] { return devices_command(*o); };
}

}  // namespace strata::cli
