// app/engine_cli/placement_cli.h — the device and placement options shared by run, chat, bench
// and plan (--devices, --split-mode, --split-ratio, --gpu-layers, --kv-on-cpu, --placement,
// --trace), and the runtime they build: devices, the plan, the pipeline, the trace recorder.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "app/engine_cli/common.h"
#include "engine/backend/device.h"
#include "engine/exec/pipeline.h"
#include "engine/plan/auto_planner.h"
#include "engine/plan/placement_options.h"
#include "engine/trace/recorder.h"
#include "engine/backend/registry/registry.h"

namespace strata::cli {

struct DeviceOptions {
  std::string devices;  // empty: every CUDA device found, then the CPU (backend::default_devices_spec)
  std::string split_mode = "layer";
  std::string split_ratio;
  int64_t gpu_layers = -1;
  bool kv_on_cpu = false;
  std::string kv_type = "f16";  // f32 | f16 | q8_0
  bool swa_full = false;        // sliding-window blocks keep n_ctx rows, not a ring
  std::string placement;   // "", "auto", FILE.json
  std::string goal = "balance";
  std::string main_device;
  std::string experts_on_cpu;              // --experts-on-cpu N|all (llama.cpp's --n-cpu-moe)
  std::vector<std::string> overrides;      // --override REGEX=DEVICE (llama.cpp's -ot)
  std::string trace_path;  // --trace out.json
  int64_t max_batch = 256;
  std::vector<std::string> model_on_rank;  // --model-on-rank R=PATH (mpirun: another rank's copy of the model)
  std::string rank_fault;                  // --rank-fault R:crash_after=N (fault injection, mpirun)
  bool measure_cpu = false;                // --measure-cpu: measure the CPU again instead of the cached figures
};

void add_device_options(CLI::App& cmd, DeviceOptions& o, bool with_trace = true);

struct Runtime {
  std::vector<std::unique_ptr<backend::Device>> devices;
  std::vector<DeviceInfo> infos;
  plan::PlanResult plan;
  std::unique_ptr<trace::Recorder> recorder;  // only with --trace
  int32_t host_lane = -1;                     // tokenize / sample lane
  std::unique_ptr<exec::Pipeline> pipeline;
};

// Devices and their infos (CPU bandwidth measured when the plan needs it).
// The --devices spec to use: as given, or the default (every CUDA device found, then the CPU).
std::string resolved_devices(const DeviceOptions& o);
// Whether the devices are the CPU alone (then its bandwidth need not be measured).
bool only_cpu(const DeviceOptions& o);
Expected<Runtime> make_runtime_devices(const ModelOptions& model_options, const DeviceOptions& o, bool measure_cpu);
// The placement request the options ask for (n_seq sequences at once, the model options' context).
Expected<plan::PlacementRequest> placement_request(const ModelOptions& mo, const DeviceOptions& o, int64_t n_seq);
// The placement asked for, its estimate checked against every device (OutOfMemory with the
// shortfall per device); n_seq sequences at once. With no placement options, the auto plan when the
// default split does not fit (plan::plan_that_fits).
Expected<plan::PlanResult> make_plan(const model::Model& model, const Runtime& runtime, const ModelOptions& mo,
                                     const DeviceOptions& o, int64_t n_seq);
// All of it: devices, plan, recorder, pipeline.
Expected<Runtime> build_runtime(const model::Model& model, const ModelOptions& mo, const DeviceOptions& o,
                                int64_t n_seq);
// Writes the Chrome trace if --trace was given; errors are reported, not fatal.
void finish_trace(const Runtime& runtime, const DeviceOptions& o);

}  // namespace strata::cli
