// engine/serve/engine_host.h — what the server serves: the devices, the trace recorder, and the
// loaded model with its pipeline and scheduler (replaced by load/unload). No HTTP here.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/chat/chat_template.h"
#include "engine/core/status.h"
#include "engine/exec/device.h"
#include "engine/exec/pipeline.h"
#include "engine/exec/scheduler.h"
#include "engine/model/model.h"
#include "engine/plan/placement_options.h"
#include "engine/trace/recorder.h"

namespace strata::serve {

// A model being served. Members are destroyed scheduler first, then pipeline, then model.
struct LoadedModel {
  std::unique_ptr<model::Model> model;
  std::string id;                              // the file stem: what clients name in "model"
  std::optional<chat::ChatTemplate> tmpl;      // the model's template, or the "completion" one
  bool own_template = false;                   // the file has its own chat template
  std::string template_error;                  // why tmpl is empty
  std::unique_ptr<exec::Pipeline> pipeline;
  std::shared_ptr<exec::Scheduler> scheduler;  // shared: streams hold it to cancel safely
  std::chrono::system_clock::time_point loaded_at;

  ~LoadedModel();
};

struct HostOptions {
  int64_t n_seq = 4;                           // --parallel: sequence slots
  int64_t max_waiting = 64;                    // --queue
  plan::PlacementRequest default_request;      // how a load with placement null is placed
};

// Thread rules: every method may be called from any thread. load/unload serialise on a load
// mutex; readers take a shared_ptr to the current model (current()) and keep it for as long
// as they use it. Stop protocol: unload() (also done by the destructor) shuts the scheduler
// down, which finishes every request with Cancelled, then waits up to 10 s for readers to
// drop their references before the pipeline's device memory is released.
class EngineHost {
 public:
  EngineHost(std::vector<std::unique_ptr<exec::Device>> devices, HostOptions options);
  ~EngineHost();

  // Loads a model (replacing the current one). placement: a placement JSON object, the string
  // "auto", or null (the default request). n_ctx / n_seq 0: the defaults. Unsupported when
  // another load is running; the current model stays when the new one cannot be loaded or
  // placed (OutOfMemory names each device's shortfall).
  Status load(const std::filesystem::path& path, const nlohmann::json& placement, int64_t n_ctx, int64_t n_seq);
  // Serves an already loaded model with a placement (the command line's path).
  Status adopt(std::unique_ptr<model::Model> model, const plan::Placement& placement);
  void unload();
  // How the command line's model was placed, or why none is loaded (status "startup").
  void set_startup(std::vector<std::string> explanation, std::string error);

  std::shared_ptr<LoadedModel> current() const;
  std::string state() const;  // "ready", "loading", "empty"

  const std::vector<exec::DeviceInfo>& device_infos_at_start() const { return infos_; }
  std::vector<exec::DeviceInfo> device_infos() const;  // bytes_free now
  trace::Recorder& recorder() { return recorder_; }
  int32_t host_lane() const { return host_lane_; }
  const HostOptions& options() const { return options_; }

  // JSON of the control API (docs/api.md).
  nlohmann::json devices_json() const;
  nlohmann::json status_json() const;
  // [{"device","weights","kv","scratch","overhead","total","capacity"}] of the loaded pipeline
  // (asked on the scheduler thread); [] when nothing is loaded.
  nlohmann::json memory_json(const LoadedModel& loaded) const;

  // A placement JSON for the loaded model (structure, devices, fits): the placement and its
  // memory estimate. InvalidArgument / NotFound for a bad placement.
  Expected<plan::Placement> parse_placement(const LoadedModel& loaded, const nlohmann::json& json) const;

 private:
  Status install(std::unique_ptr<model::Model> model, const plan::Placement& placement);

  std::vector<std::unique_ptr<exec::Device>> devices_;
  std::vector<exec::DeviceInfo> infos_;
  HostOptions options_;
  trace::Recorder recorder_;
  int32_t host_lane_ = -1;
  std::chrono::steady_clock::time_point started_;

  std::mutex load_mutex_;            // one load / unload at a time
  std::atomic<bool> loading_{false};
  mutable std::mutex mutex_;         // guards current_
  std::shared_ptr<LoadedModel> current_;
  std::vector<std::string> startup_explanation_;  // guarded by mutex_
  std::string startup_error_;                     // guarded by mutex_
};

}  // namespace strata::serve
