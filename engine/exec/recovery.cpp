// engine/exec/recovery.cpp — re-planning after a lost device (see recovery.h).
#include "engine/exec/recovery.h"

#include <algorithm>
#include <chrono>

#include "engine/plan/auto_planner.h"

namespace strata::exec {

std::vector<std::string> devices_out_of_memory(const Pipeline& pipeline, const Error& error) {
  std::vector<std::string> out;
  if (error.code != Code::OutOfMemory) return out;
  for (const std::string& id : pipeline.placement().devices()) {
    if (error.message.find("device '" + id + "'") == std::string::npos) continue;
    for (backend::Device* d : pipeline.devices()) {
      if (d->id() == id && !d->failed() && d->can_be_lost()) out.push_back(id);
    }
  }
  return out;
}

Expected<ReplanReport> replan_without_failed(Pipeline& pipeline, const std::string& cause,
                                             const std::vector<std::string>& full) {
  const auto t0 = std::chrono::steady_clock::now();
  ReplanReport report;
  report.lost = pipeline.failed_devices();
  report.full = full;
  report.cause = cause;
  const plan::Placement& old = pipeline.placement();
  plan::AutoPlanOptions o;
  o.n_ctx = old.n_ctx;
  o.n_seq = old.n_seq;
  o.max_batch = old.max_batch;
  o.kv_type = old.kv_type;
  o.swa_full = old.swa_full;
  const model::Model& m = pipeline.model();
  // Each attempt either succeeds or leaves out one more device (refused, or lost meanwhile), so this ends.
  while (true) {
    std::vector<DeviceInfo> alive;
    for (backend::Device* d : pipeline.devices()) {
      if (d->failed()) continue;
      if (std::find(report.excluded.begin(), report.excluded.end(), d->id()) != report.excluded.end()) continue;
      if (std::find(full.begin(), full.end(), d->id()) != full.end()) continue;
      alive.push_back(d->info());
    }
    std::string lost_text;
    for (const std::string& id : report.lost) lost_text += (lost_text.empty() ? "" : ", ") + id;
    for (const std::string& id : full) lost_text += (lost_text.empty() ? "" : ", ") + id + " (out of memory)";
    if (alive.empty()) return Error{Code::OutOfMemory, "lost " + lost_text + ": no device is left to run the model"};
    auto planned = plan::auto_plan(m.config(), m.weights(), alive, o);
    if (!planned.ok())
      return Error{planned.error().code, "lost " + lost_text + ": the model no longer fits the devices left: " +
                                             planned.error().message};
    auto moved = pipeline.apply(planned->placement, Pipeline::KvOnApply::Discard);
    if (moved.ok()) {
      report.placement = pipeline.placement();
      report.moved_blocks = *moved;
      report.explanation = planned->explanation;
      report.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      return report;
    }
    // A device lost while re-placing (a rank that died in turn, say) is left out like the first.
    // alive held no failed device, so one of them failed now is a new loss.
    bool lost_more = false;
    for (backend::Device* d : pipeline.devices()) {
      const bool was_alive = std::any_of(alive.begin(), alive.end(), [&](const DeviceInfo& i) { return i.id == d->id(); });
      if (!d->failed() || !was_alive) continue;
      report.lost.push_back(d->id());
      lost_more = true;
    }
    if (lost_more) continue;
    // Which device refused? Errors name it as "device 'ID'".
    std::string refused;
    if (moved.error().code == Code::OutOfMemory || moved.error().code == Code::Device) {
      for (const DeviceInfo& d : alive) {
        if (moved.error().message.find("device '" + d.id + "'") != std::string::npos) refused = d.id;
      }
    }
    if (refused.empty())
      return Error{moved.error().code, "lost " + lost_text + ": re-placing failed: " + moved.error().message};
    report.excluded.push_back(refused);
  }
}

}  // namespace strata::exec
