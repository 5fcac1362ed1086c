// engine/serve/engine_host.h — what the server serves: the devices, the trace recorder, and the
// loaded model with its pipeline and scheduler (replaced by load/unload). No HTTP here.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/chat/chat_template.h"
#include "engine/core/status.h"
#include "engine/backend/device.h"
#include "engine/exec/pipeline.h"
#include "engine/exec/scheduler.h"
#include "engine/model/model.h"
#include "engine/plan/placement_options.h"
#include "engine/plan/straggler.h"
#include "engine/trace/recorder.h"
#include "engine/backend/sim/sim_device.h"

namespace strata::serve {

// A model being served. Members are destroyed scheduler first, then pipeline, then model.
struct LoadedModel {
  std::unique_ptr<model::Model> model;
  std::string id;                              // the file stem: what clients name in "model"
  std::optional<chat::ChatTemplate> tmpl;      // the model's template, or the "completion" one
  bool own_template = false;                   // the file has its own chat template
  std::string template_error;                  // why tmpl is empty
  std::unique_ptr<exec::Pipeline> pipeline;
  // Speculative decoding's draft model (HostOptions::draft_model), when it loaded and shares the
  // model's vocabulary; destroyed after the scheduler that drives it.
  std::unique_ptr<model::Model> draft_model;
  std::unique_ptr<exec::DraftModel> drafter;
  std::string draft_error;                     // why there is no drafter although one was asked for
  std::shared_ptr<exec::Scheduler> scheduler;  // shared: streams hold it to cancel safely
  std::chrono::system_clock::time_point loaded_at;

  ~LoadedModel();
};

struct HostOptions {
  int64_t n_seq = 4;                           // --parallel: sequence slots
  int64_t max_waiting = 64;                    // --queue
  int64_t prompt_chunk = 64;                   // prompt tokens a step while others decode (chunked prefill)
  double device_timeout_s = 60;                // a device's work unfinished this long: it is lost (0: no limit)
  plan::PlacementRequest default_request;      // how a load with placement null is placed
  // Loads are restricted to files under these folders unless allow_any_path (empty: any path).
  std::vector<std::filesystem::path> model_dirs;
  bool allow_any_path = false;
  // Under mpirun: the other ranks (their devices are among the host's). Every rank maps the model
  // given at start-up, so a load over HTTP may only name that file again (other placements, n_ctx
  // and n_seq are fine).
  exec::RankBridge* ranks = nullptr;
  std::filesystem::path ranks_model;  // the model every rank maps
  // Speculative decoding: the draft model loaded beside every model (empty: none), the device it
  // runs on (an id of the host's devices), and what a request that does not say gets.
  std::filesystem::path draft_model;
  std::string draft_device = "cpu";
  exec::SpeculativeParams speculative;
};

// Checks a model path before anything opens it: no NUL, inside the model folders (when they are
// restricted), a regular file (never a FIFO or device, which could block an open), big enough,
// starting with the GGUF magic. InvalidArgument: the path itself is refused (NUL, empty, outside
// the folders) before the disk is looked at. NotFound / Corrupt / Io: what the file is, with
// details for the server's log only (clients get a uniform "cannot open model", so the answers
// are no oracle for files on the server).
Status check_model_file(const std::string& path, const HostOptions& options);

// Resident set size of this process, in bytes (0 when /proc cannot be read).
uint64_t process_rss_bytes();

// Thread rules: every method may be called from any thread. load/unload serialise on a load
// mutex; readers take a shared_ptr to the current model (current()) and keep it for as long
// as they use it. Stop protocol: unload() (also done by the destructor) shuts the scheduler
// down, which finishes every request with Cancelled, then waits up to 10 s for readers to
// drop their references before the pipeline's device memory is released.
class EngineHost {
 public:
  EngineHost(std::vector<std::unique_ptr<backend::Device>> devices, HostOptions options);
  ~EngineHost();

  // Loads a model (replacing the current one). placement: a placement JSON object, the string
  // "auto", or null (the default request). n_ctx / n_seq 0: the defaults. Unsupported when
  // another load is running; the current model stays when the new one cannot be loaded or
  // placed (OutOfMemory names each device's shortfall). The load itself runs on the host's one
  // long-lived loader thread (so weight memory comes from one malloc arena and goes back to the
  // system on unload); the caller waits, and gets Cancelled at once when the host shuts down.
  // failed_param (optional) is set to "path" or "placement": which input the error is about.
  Status load(const std::filesystem::path& path, const nlohmann::json& placement, int64_t n_ctx, int64_t n_seq,
              std::string* failed_param = nullptr);
  // Serves an already loaded model with a placement (the command line's path).
  Status adopt(std::unique_ptr<model::Model> model, const plan::Placement& placement);
  void unload();
  // Stopping: loads are refused or abandoned (Cancelled), and the current model's requests end
  // (Cancelled: streams get an error event). Idempotent, any thread, does not wait for a load.
  void begin_shutdown();
  bool shutting_down() const { return stopping_.load(); }
  // How the command line's model was placed, or why none is loaded (status "startup").
  void set_startup(std::vector<std::string> explanation, std::string error);

  std::shared_ptr<LoadedModel> current() const;
  std::string state() const;  // "ready", "loading", "empty"

  const std::vector<DeviceInfo>& device_infos_at_start() const { return infos_; }
  std::vector<DeviceInfo> device_infos() const;  // bytes_free now
  trace::Recorder& recorder() { return recorder_; }
  int32_t host_lane() const { return host_lane_; }
  int32_t draft_lane() const { return draft_lane_; }  // -1: the server does not speculate by default
  // {"default": {"mode","max_draft"}, "draft": null | {"id","path","device","parameters",
  // "weight_bytes","memory_bytes"}, "draft_error", "drafted", "accepted", "acceptance"}.
  nlohmann::json speculative_json(const LoadedModel& loaded) const;
  const HostOptions& options() const { return options_; }

  // Arms a fault on a simulated device (docs/api.md, POST /strata/v1/devices/ID/fault). lost_now:
  // the device is lost at once (its next op fails). NotFound for an unknown device,
  // InvalidArgument for a device that is not simulated.
  Status inject_fault(const std::string& device_id, const backend::SimFaults& faults, bool lost_now);
  // Each device's measured compute time against its planned time over the last `seconds` of the
  // trace (plan::compare_with_plan); stragglers are flagged.
  std::vector<plan::DeviceSpeed> device_speeds(const LoadedModel& loaded, double seconds = 5) const;
  // The devices an "auto" re-plan may use: not failed, stragglers at their measured speed
  // (bandwidth and compute rate divided by their slowdown), so the plan balances around them.
  std::vector<DeviceInfo> planning_infos(const LoadedModel& loaded) const;
  // Re-plans after lost devices, oldest first: {"time_ns","ok","lost","excluded","cause","error",
  // "moved_blocks","ms","explanation","placement"}. index: the first one wanted.
  std::vector<nlohmann::json> replans_since(size_t index) const;

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
  // Loads options_.draft_model for `loaded` (its pipeline made): loaded.drafter, or draft_error.
  void load_draft(LoadedModel& loaded);
  struct LoadJob;
  void do_load(LoadJob& job);
  void loader_loop();

  std::vector<std::unique_ptr<backend::Device>> devices_;
  std::vector<DeviceInfo> infos_;
  HostOptions options_;
  trace::Recorder recorder_;
  int32_t host_lane_ = -1;
  int32_t draft_lane_ = -1;
  std::chrono::steady_clock::time_point started_;

  std::mutex load_mutex_;            // one load / unload at a time
  std::atomic<bool> loading_{false};
  mutable std::mutex mutex_;         // guards current_
  std::shared_ptr<LoadedModel> current_;
  std::vector<std::string> startup_explanation_;  // guarded by mutex_
  std::vector<nlohmann::json> replans_;           // guarded by mutex_
  std::string startup_error_;                     // guarded by mutex_

  std::atomic<bool> stopping_{false};
  std::mutex loader_mutex_;          // guards job_ and loader_stop_
  std::condition_variable loader_cv_;
  std::shared_ptr<LoadJob> job_;     // the job handed to the loader thread
  bool loader_stop_ = false;
  std::thread loader_;               // last member: started after everything it uses
};

}  // namespace strata::serve
