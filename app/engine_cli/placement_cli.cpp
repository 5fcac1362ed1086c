// app/engine_cli/placement_cli.cpp — option parsing to devices, plan, pipeline.
#include "app/engine_cli/placement_cli.h"

#include <cstdio>

#include "app/engine_cli/ranks.h"
#include "engine/plan/memory_estimate.h"
#include "engine/trace/chrome_trace.h"
#include "engine/trace/trace_summary.h"
#include "engine/backend/cpu/cpu_speed.h"
#include "engine/backend/registry/registry.h"

namespace strata::cli {

void add_device_options(CLI::App& cmd, DeviceOptions& o, bool with_trace) {
  cmd.add_option("--devices", o.devices,
                 "devices: cpu,cuda,cuda:N,sim:gpu0:24GiB[:bw=900GB/s:tflops=80:link=25GB/s:threads=1:overhead=256MiB] "
                 "(default: every CUDA device found, then the CPU)");
  cmd.add_option("--split-mode", o.split_mode, "none | layer | tensor");
  cmd.add_option("--split-ratio,--tensor-split", o.split_ratio, "share per accelerator, e.g. 3,1 (default: by memory)");
  cmd.add_option("--gpu-layers,--n-gpu-layers", o.gpu_layers, "blocks on the accelerators, the rest on the CPU (default: all)")
      ->check(CLI::Range(int64_t{-1}, int64_t{1} << 20));
  cmd.add_flag("--kv-on-cpu", o.kv_on_cpu, "keep every block's KV cache on the CPU");
  cmd.add_flag("--measure-cpu", o.measure_cpu,
               "measure the CPU's read bandwidth and product rates again instead of using the cached figures "
               "(~/.cache/strata/cpu-speed.json; $STRATA_CPU_SPEED_CACHE)");
  cmd.add_option("--kv-type,--cache-type", o.kv_type,
                 "KV cache elements: f16 (default), f32, or q8_0 (about half of f16's memory; CPU and simulated devices)")
      ->check(CLI::IsMember({"f32", "f16", "q8_0"}));
  cmd.add_flag("--swa-full", o.swa_full,
               "sliding-window blocks keep a KV cache of the whole context instead of a ring of their window plus "
               "one batch (more memory; any earlier position can then be returned to without evaluating again)");
  cmd.add_option("--placement", o.placement, "auto | FILE.json (overrides the split options)");
  cmd.add_option("--plan-goal", o.goal, "for --placement auto: fit | balance | fewest-transfers");
  cmd.add_option("--main-device", o.main_device, "device of the unsplit parts (split-mode none / tensor)");
  cmd.add_option("--experts-on-cpu,--n-cpu-moe", o.experts_on_cpu,
                 "MoE models: the routed experts of the first N blocks (or 'all') on the CPU, the rest of each block "
                 "where the split puts it");
  cmd.add_option("--override,--override-tensor", o.overrides,
                 "place parts by tensor name, llama.cpp -ot style: REGEX=DEVICE[,REGEX=DEVICE...], e.g. 'exps=cpu' "
                 "(the first matching pattern wins; a block's attention, FFN and experts each move whole)");
  cmd.add_option("--batch", o.max_batch, "tokens per forward pass in prompt processing")
      ->check(CLI::Range(int64_t{1}, int64_t{65536}));
  if (with_trace) cmd.add_option("--trace", o.trace_path, "write a Chrome trace (Perfetto) of the run to this file");
  cmd.add_option("--model-on-rank", o.model_on_rank,
                 "under mpirun: rank R maps the model from PATH instead of --model (R=PATH, repeatable)");
  cmd.add_option("--rank-fault", o.rank_fault,
                 "under mpirun, fault injection: rank R dies (SIGKILL) instead of answering its stage call N+1 "
                 "(R:crash_after=N; start mpirun with --enable-recovery so that the other ranks live on)");
  register_devices_option(cmd, &o.devices, &o.model_on_rank, &o.rank_fault);
}

std::string resolved_devices(const DeviceOptions& o) {
  return o.devices.empty() ? backend::default_devices_spec() : o.devices;
}

bool only_cpu(const DeviceOptions& o) {
  const std::string d = resolved_devices(o);
  return d == "cpu" || d.rfind("cpu:", 0) == 0;
}

Expected<Runtime> make_runtime_devices(const ModelOptions& mo, const DeviceOptions& o, bool measure_cpu) {
  Runtime rt;
  const int threads = resolve_threads(mo.threads);
  // The CPU's measured speed, from the cache after the first time (cpu_speed.h): the cost model's
  // CPU figures come from this machine, not from defaults, also for a CPU-only plan.
  (void)measure_cpu;
  const CpuSpeed cpu_bw = backend::cpu_speed(threads, o.measure_cpu).speed;
  if (rank_context()) {
    // Several ranks: this rank's devices ("r0:...") and the others' stand-ins.
    STRATA_ASSIGN_OR_RETURN(rt.devices, connect_ranks(o.devices, threads, cpu_bw));
  } else {
    STRATA_ASSIGN_OR_RETURN(rt.devices, backend::make_devices(resolved_devices(o), threads, cpu_bw));
  }
  for (const auto& d : rt.devices) rt.infos.push_back(d->info());
  return rt;
}

Expected<plan::PlacementRequest> placement_request(const ModelOptions& mo, const DeviceOptions& o, int64_t n_seq) {
  plan::PlacementRequest req;
  req.placement = o.placement;
  STRATA_ASSIGN_OR_RETURN(req.split_mode, plan::parse_split_mode(o.split_mode));
  if (!o.split_ratio.empty()) {
    STRATA_ASSIGN_OR_RETURN(req.split_ratio, plan::parse_split_ratio(o.split_ratio));
  }
  req.gpu_layers = o.gpu_layers;
  req.kv_on_cpu = o.kv_on_cpu;
  STRATA_ASSIGN_OR_RETURN(req.kv_type, plan::kv_type_from_name(o.kv_type));
  req.swa_full = o.swa_full;
  req.main_device = o.main_device;
  if (!o.experts_on_cpu.empty()) {
    STRATA_ASSIGN_OR_RETURN(req.experts_on_cpu, plan::parse_experts_on_cpu(o.experts_on_cpu));
  }
  STRATA_ASSIGN_OR_RETURN(req.overrides, plan::parse_overrides(o.overrides));
  req.n_ctx = mo.ctx;
  req.n_seq = n_seq;
  req.max_batch = o.max_batch;
  STRATA_ASSIGN_OR_RETURN(req.goal, plan::parse_plan_goal(o.goal));
  return req;
}

Expected<plan::PlanResult> make_plan(const model::Model& model, const Runtime& rt, const ModelOptions& mo,
                                     const DeviceOptions& o, int64_t n_seq) {
  STRATA_ASSIGN_OR_RETURN(plan::PlacementRequest req, placement_request(mo, o, n_seq));
  // No placement options: the default split, or the auto plan when that does not fit.
  return plan::plan_that_fits(model.config(), model.weights(), rt.infos, req);
}

Expected<Runtime> build_runtime(const model::Model& model, const ModelOptions& mo, const DeviceOptions& o,
                                int64_t n_seq) {
  STRATA_ASSIGN_OR_RETURN(Runtime rt, make_runtime_devices(mo, o, /*measure_cpu=*/!only_cpu(o) || o.placement == "auto"));
  STRATA_ASSIGN_OR_RETURN(rt.plan, make_plan(model, rt, mo, o, n_seq));
  if (!o.trace_path.empty()) {
    rt.recorder = std::make_unique<trace::Recorder>();
    for (const auto& info : rt.infos) rt.recorder->add_lane(info.id, info.simulated);
    rt.host_lane = rt.recorder->add_lane("host", false);
  }
  std::vector<backend::Device*> list;
  for (const auto& d : rt.devices) list.push_back(d.get());
  dist::Cluster* cluster = rank_context() ? rank_context()->cluster.get() : nullptr;
  if (cluster) cluster->set_tracing(rt.recorder != nullptr);
  STRATA_ASSIGN_OR_RETURN(rt.pipeline,
                          exec::Pipeline::create(model, list, rt.plan.placement, rt.recorder.get(), cluster));
  return rt;
}

void finish_trace(const Runtime& rt, const DeviceOptions& o) {
  if (!rt.recorder || o.trace_path.empty()) return;
  rt.pipeline->snapshot_memory();
  if (Status s = trace::write_chrome_json(*rt.recorder, o.trace_path); !s.ok()) {
    report(s.error());
    return;
  }
  std::fprintf(stderr, "%s", trace::format_summary(trace::summarize(*rt.recorder)).c_str());
  std::fprintf(stderr, "trace written to %s\n", o.trace_path.c_str());
}

}  // namespace strata::cli
