// app/engine_cli/cmd_plan.cpp — `strata-engine plan`: the placement and its memory table,
// predicted speed and the planner's reasons, without loading any weights.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "app/engine_cli/commands.h"
#include "app/engine_cli/common.h"
#include "app/engine_cli/placement_cli.h"
#include "engine/exec/speculative.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"
#include "engine/plan/cost_model.h"
#include "engine/plan/memory_estimate.h"
#include "engine/plan/placement_parts.h"
#include "engine/tokenizer/vocab.h"

namespace strata::cli {

namespace {
struct PlanOptions {
  ModelOptions model;
  DeviceOptions devices;
  int64_t n_seq = 1;
  bool json = false;
  std::string save;
  std::string draft;                // --draft: a draft model for speculative decoding, planned beside
  std::string draft_device = "cpu";
};

// The draft model's memory on its device, beside the placement's (the draft runs outside the
// placement, on one device: exec::DraftModel::placement). Header and tensor table only.
struct DraftPlan {
  std::string model;
  plan::DeviceMemory memory;        // the draft's own bytes on its device
  uint64_t device_total = 0;        // the placement's bytes there plus the draft's
  uint64_t capacity = 0;
  bool fits = true;
};

Expected<DraftPlan> plan_draft(const PlanOptions& o, const gguf::GgufFile& target_file, const model::ModelConfig& target,
                               const plan::PlanResult& result, const std::vector<DeviceInfo>& infos) {
  STRATA_ASSIGN_OR_RETURN(std::filesystem::path path, resolve_model_path(o.draft));
  STRATA_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::open(path));
  STRATA_ASSIGN_OR_RETURN(model::ModelConfig config, model::read_model_config(file));
  STRATA_ASSIGN_OR_RETURN(model::ModelWeights weights, model::bind_weights(file, config));
  STRATA_ASSIGN_OR_RETURN(tokenizer::Vocab dv, tokenizer::Vocab::from_gguf(file));
  STRATA_ASSIGN_OR_RETURN(tokenizer::Vocab tv, tokenizer::Vocab::from_gguf(target_file));
  STRATA_RETURN_IF_ERROR(exec::check_draft_vocabulary(dv, config.n_vocab, tv, target.n_vocab));
  const plan::Placement& p = result.placement;
  STRATA_ASSIGN_OR_RETURN(plan::MemoryEstimate est,
                          plan::estimate_memory(exec::DraftModel::placement(config, o.draft_device, p.n_seq, p.n_ctx),
                                                config, weights, infos));
  const plan::DeviceMemory* mine = est.find(o.draft_device);
  if (!mine) return Error{Code::InvalidArgument, "--draft-device " + o.draft_device + " is not one of the devices"};
  DraftPlan d;
  d.model = path.filename().string();
  d.memory = *mine;
  const plan::DeviceMemory* theirs = result.memory.find(o.draft_device);
  d.device_total = mine->total_bytes + (theirs ? theirs->total_bytes : 0);
  d.capacity = mine->capacity_bytes;
  d.fits = d.device_total <= d.capacity;
  return d;
}

int plan_command(const PlanOptions& o) {
  // Header and tensor table only: bind_weights records pointers into the mapping but reads no
  // weight bytes, so planning a 70B model on a laptop is instant.
  auto path = resolve_model_path(o.model.model);
  if (!path.ok()) return report(path.error());
  auto file = gguf::GgufFile::open(*path);
  if (!file.ok()) return report(file.error());
  auto config = model::read_model_config(*file);
  if (!config.ok()) return report(config.error());
  auto weights = model::bind_weights(*file, *config);
  if (!weights.ok()) return report(weights.error());
  const bool measure = o.devices.placement == "auto" || !only_cpu(o.devices);
  auto rt = make_runtime_devices(o.model, o.devices, measure);
  if (!rt.ok()) return report(rt.error());

  auto req = placement_request(o.model, o.devices, o.n_seq);
  if (!req.ok()) return report(req.error());
  auto result = plan::plan_from_options(*config, *weights, rt->infos, *req);
  if (!result.ok()) return report(result.error());
  const Status fits = plan::check_fits(result->memory);
  // Simulated devices: the declared hardware's figures above, and what this machine can run (the
  // simulation is bounded by the host CPU).
  std::optional<plan::CostEstimate> on_host;
  if (plan::uses_simulated(result->placement, rt->infos)) {
    auto here = plan::estimate_cost(result->placement, *config, *weights, plan::host_bounded(rt->infos));
    if (here.ok()) on_host = std::move(*here);
  }
  if (!o.save.empty()) {
    if (Status s = plan::save_placement_file(result->placement, o.save); !s.ok()) return report(s.error());
  }
  std::optional<DraftPlan> draft;
  if (!o.draft.empty()) {
    auto d = plan_draft(o, *file, *config, *result, rt->infos);
    if (!d.ok()) return report(d.error());
    draft = std::move(*d);
  }
  const bool draft_fits = !draft || draft->fits;
  if (o.json) {
    nlohmann::json j;
    j["model"] = config->name.empty() ? path->stem().string() : config->name;
    j["placement"] = plan::to_json(result->placement);
    j["memory"] = plan::to_json(result->memory);
    j["parts"] = plan::parts_json(result->placement, *config, *weights);
    j["cost"] = plan::to_json(result->cost);
    j["cost_full_context"] = plan::to_json(result->cost_full_context);
    j["cost_on_this_machine"] = nullptr;
    if (on_host) j["cost_on_this_machine"] = plan::to_json(*on_host);
    j["explanation"] = result->explanation;
    j["draft"] = nullptr;
    if (draft)
      j["draft"] = {{"model", draft->model},          {"device", draft->memory.device},
                    {"weight_bytes", draft->memory.weight_bytes}, {"kv_bytes", draft->memory.kv_bytes},
                    {"scratch_bytes", draft->memory.scratch_bytes}, {"total_bytes", draft->memory.total_bytes},
                    {"device_total_bytes", draft->device_total}, {"capacity_bytes", draft->capacity},
                    {"fits", draft->fits}};
    j["fits"] = fits.ok() && draft_fits;
    if (!fits.ok()) j["error"] = fits.error().message;
    std::printf("%s\n", j.dump(2).c_str());
    return fits.ok() && draft_fits ? 0 : 1;
  }
  std::printf("model %s: %lld blocks, ctx %lld, %lld sequence(s)\n", path->filename().string().c_str(),
              (long long)config->n_layers, (long long)result->placement.n_ctx, (long long)result->placement.n_seq);
  std::printf("\ndevices\n");
  for (const auto& info : rt->infos)
    std::printf("  %-8s %s, %s, %.0f GB/s%s\n", info.id.c_str(), info.name.c_str(),
                plan::format_bytes(info.bytes_total).c_str(), info.bandwidth_gbps,
                info.simulated ? ", simulated" : "");
  std::printf("\nplacement\n%s\n", plan::to_json(result->placement).dump(2).c_str());
  std::printf("\nparts\n%s", plan::format_parts_table(result->placement, *config, *weights).c_str());
  std::printf("\nmemory\n%s", plan::format_memory_table(result->memory).c_str());
  std::printf("\npredicted%s: %.1f tokens/s decode (%.2f ms/token), %.1f tokens/s prefill (empty cache); %.1f and "
              "%.1f with %lld tokens in the cache\n",
              on_host ? " for the declared hardware" : "", result->cost.decode_tokens_per_s,
              result->cost.decode_ms_per_token, result->cost.prefill_tokens_per_s,
              result->cost_full_context.decode_tokens_per_s, result->cost_full_context.prefill_tokens_per_s,
              (long long)result->placement.n_ctx);
  if (on_host)
    std::printf("predicted on this machine (the simulation is bounded by the host CPU): %.1f tokens/s decode "
                "(%.2f ms/token), %.1f tokens/s prefill\n",
                on_host->decode_tokens_per_s, on_host->decode_ms_per_token, on_host->prefill_tokens_per_s);
  if (draft)
    std::printf("\ndraft model (speculative decoding)\n  %s on %s: weights %s, KV %s, scratch %s = %s; %s then holds %s "
                "of %s: %s\n",
                draft->model.c_str(), draft->memory.device.c_str(), plan::format_bytes(draft->memory.weight_bytes).c_str(),
                plan::format_bytes(draft->memory.kv_bytes).c_str(), plan::format_bytes(draft->memory.scratch_bytes).c_str(),
                plan::format_bytes(draft->memory.total_bytes).c_str(), draft->memory.device.c_str(),
                plan::format_bytes(draft->device_total).c_str(), plan::format_bytes(draft->capacity).c_str(),
                draft->fits ? "fits" : ("short " + plan::format_bytes(draft->device_total - draft->capacity)).c_str());
  std::printf("\nwhy\n");
  for (const std::string& line : result->explanation) std::printf("  %s\n", line.c_str());
  if (!fits.ok()) return report(fits.error());
  if (!draft_fits)
    return report(Error{Code::OutOfMemory, "device '" + draft->memory.device + "' cannot hold the draft model beside the placement: needs " +
                                               plan::format_bytes(draft->device_total) + ", has " +
                                               plan::format_bytes(draft->capacity)});
  return 0;
}

}  // namespace

Command add_plan_command(CLI::App& app) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* cmd = app.add_subcommand("plan", "show the placement, memory per device and predicted speed (loads no weights)");
  add_model_options(*cmd, o->model);
  add_device_options(*cmd, o->devices, /*with_trace=*/false);
  cmd->add_option("--parallel", o->n_seq, "sequences decoded at once")->check(CLI::Range(int64_t{1}, int64_t{256}));
  cmd->add_option("--save", o->save, "write the placement JSON to this file");
  cmd->add_flag("--json", o->json, "print JSON");
  cmd->add_option("--draft", o->draft, "a draft model for speculative decoding: its memory on --draft-device, beside the placement");
  cmd->add_option("--draft-device", o->draft_device, "the device the draft model runs on");
  return [o] { return plan_command(*o); };
}

}  // namespace strata::cli
