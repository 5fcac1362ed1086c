// engine/plan/placement_options.cpp — llama.cpp-style options turned into a Placement.
// Builds plain data and delegates sizes to memory_estimate / cost_model; touches no device.
#include "engine/plan/placement_options.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <sstream>

#include "engine/plan/placement_validate.h"

namespace strata::plan {

const char* split_mode_name(SplitMode mode) {
  switch (mode) {
    case SplitMode::None: return "none";
    case SplitMode::Layer: return "layer";
    case SplitMode::Tensor: return "tensor";
  }
  return "?";
}

Expected<SplitMode> parse_split_mode(const std::string& text) {
  for (SplitMode m : {SplitMode::None, SplitMode::Layer, SplitMode::Tensor})
    if (text == split_mode_name(m)) return m;
  return Error{Code::InvalidArgument, "split mode '" + text + "' is not one of: none, layer, tensor"};
}

Expected<std::vector<double>> parse_split_ratio(const std::string& text) {
  std::vector<double> out;
  std::string item;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find_first_of(",/", start);
    if (end == std::string::npos) end = text.size();
    item = text.substr(start, end - start);
    char* stop = nullptr;
    const double v = item.empty() ? 0.0 : std::strtod(item.c_str(), &stop);
    if (item.empty() || stop != item.c_str() + item.size() || !std::isfinite(v))
      return Error{Code::InvalidArgument, "split ratio '" + text + "': '" + item + "' is not a number"};
    if (v < 0) return Error{Code::InvalidArgument, "split ratio '" + text + "': " + item + " is negative"};
    out.push_back(v);
    start = end + 1;
  }
  return out;
}

namespace {

Error bad(const std::string& m) { return Error{Code::InvalidArgument, m}; }

std::string ids_of(const std::vector<DeviceInfo>& ds) {
  std::string out;
  for (const auto& d : ds) out += (out.empty() ? "" : ", ") + d.id;
  return out;
}

const DeviceInfo* first_cpu(const std::vector<DeviceInfo>& devices) {
  for (const auto& d : devices)
    if (d.kind == DeviceKind::Cpu) return &d;
  return nullptr;
}

Expected<Placement> from_split_options(const model::ModelConfig& c, const std::vector<DeviceInfo>& devices,
                                       const PlacementRequest& r) {
  const int64_t n = c.n_layers;
  if (r.gpu_layers < -1) return bad("gpu_layers " + std::to_string(r.gpu_layers) + " must be >= 0 (or -1 for all)");
  std::vector<DeviceInfo> accel;
  for (const auto& d : devices)
    if (d.kind != DeviceKind::Cpu) accel.push_back(d);
  const DeviceInfo* cpu = first_cpu(devices);
  if (accel.empty()) {
    if (!cpu) return bad("no devices to place the model on");
    accel.push_back(*cpu);  // no accelerator: the CPU takes the offloaded part too
  }

  // Ratio over the accelerators.
  std::vector<double> ratio = r.split_ratio;
  if (ratio.empty()) {
    for (const auto& d : accel) ratio.push_back(static_cast<double>(d.bytes_total));
    if (std::accumulate(ratio.begin(), ratio.end(), 0.0) <= 0.0) ratio.assign(accel.size(), 1.0);
  } else if (r.split_mode != SplitMode::None) {
    if (ratio.size() != accel.size())
      return bad("split_ratio has " + std::to_string(ratio.size()) + " values for " + std::to_string(accel.size()) +
                 " accelerator" + (accel.size() == 1 ? "" : "s") + " (" + ids_of(accel) + ")");
    for (double v : ratio)
      if (!(v >= 0.0) || !std::isfinite(v)) return bad("split_ratio values must be finite and >= 0");
    if (std::accumulate(ratio.begin(), ratio.end(), 0.0) <= 0.0) return bad("split_ratio values are all 0");
  }

  // The main device (split modes none and tensor).
  const DeviceInfo* main = &accel[0];
  if (!r.main_device.empty()) {
    main = find_device(devices, r.main_device);
    if (!main)
      return Error{Code::NotFound, "main device '" + r.main_device + "' is not among: " + device_id_list(devices)};
  }

  // Which blocks are offloaded (llama.cpp -ngl): the last N; the head when N > n_layers.
  const bool all = r.gpu_layers < 0;
  const int64_t n_off = all ? n : std::min(r.gpu_layers, n);
  const int64_t first_off = n - n_off;
  const bool head_off = all || r.gpu_layers > n;
  // With -ngl N the embedding stays on the CPU (llama.cpp's input layer); with no CPU device it
  // goes with the first block when every block and the head are offloaded.
  const bool emb_on_cpu = !all && cpu != nullptr;
  if (!cpu && (first_off > 0 || !head_off))
    return bad("gpu_layers " + std::to_string(r.gpu_layers) + " leaves part of the model on the CPU, but no CPU "
               "device is given (devices: " + device_id_list(devices) + ")");

  Placement p;
  p.n_ctx = r.n_ctx > 0 ? r.n_ctx : 0;
  p.layers.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < first_off; ++i) p.layers[i].target.devices = {cpu->id};

  // Offloaded blocks.
  std::string last_off_device = main->id;
  if (n_off > 0) {
    switch (r.split_mode) {
      case SplitMode::None:
        for (int64_t i = first_off; i < n; ++i) p.layers[i].target.devices = {main->id};
        break;
      case SplitMode::Layer: {
        // llama.cpp's rule: block b of the N offloaded goes to the first device whose cumulative
        // share exceeds b / N.
        const double total = std::accumulate(ratio.begin(), ratio.end(), 0.0);
        for (int64_t b = 0; b < n_off; ++b) {
          double cum = 0;
          size_t k = 0;
          for (; k < accel.size(); ++k) {
            cum += ratio[k] / total;
            if (ratio[k] > 0 && cum > static_cast<double>(b) / static_cast<double>(n_off) + 1e-12) break;
          }
          k = std::min(k, accel.size() - 1);
          p.layers[first_off + b].target.devices = {accel[k].id};
        }
        last_off_device = p.layers[n - 1].target.devices[0];
        break;
      }
      case SplitMode::Tensor: {
        Target t;
        for (size_t k = 0; k < accel.size(); ++k) {
          if (ratio[k] <= 0) continue;
          t.devices.push_back(accel[k].id);
          t.ratio.push_back(ratio[k]);
        }
        if (t.devices.size() == 1) t.ratio.clear();
        for (int64_t i = first_off; i < n; ++i) p.layers[i].target = t;
        break;
      }
    }
  }

  // Embedding: with the first block by default; on the CPU (llama.cpp's input layer) with -ngl N.
  if (!emb_on_cpu) {
    p.embedding.devices = r.split_mode == SplitMode::Layer ? p.layers[0].target.devices
                                                           : std::vector<std::string>{main->id};
  } else {
    p.embedding.devices = {cpu->id};
  }
  // Head: with the offloaded part when -ngl exceeds the block count (or by default), else CPU.
  if (head_off) {
    p.head.devices = {r.split_mode == SplitMode::Layer ? last_off_device : main->id};
  } else {
    p.head.devices = {cpu->id};
  }

  if (r.kv_on_cpu) {
    if (!cpu) return bad("kv_on_cpu needs a CPU device (devices: " + device_id_list(devices) + ")");
    for (auto& l : p.layers)
      if (l.target.devices != std::vector<std::string>{cpu->id}) l.kv_device = cpu->id;
  }
  return p;
}

std::string ranges_on(const Placement& p, const std::string& id) {
  std::string out;
  for (const Stage& s : stages_of(p)) {
    if (std::find(s.target.devices.begin(), s.target.devices.end(), id) == s.target.devices.end()) continue;
    out += out.empty() ? "" : ", ";
    out += s.end_layer - s.first_layer == 1
               ? "layer " + std::to_string(s.first_layer)
               : "layers " + std::to_string(s.first_layer) + "-" + std::to_string(s.end_layer - 1);
    if (s.target.is_group()) out += " (tensor split)";
  }
  return out;
}

}  // namespace

Expected<PlanResult> plan_from_options(const model::ModelConfig& c, const model::ModelWeights& w,
                                       const std::vector<DeviceInfo>& devices, const PlacementRequest& r) {
  if (r.placement == "auto") {
    AutoPlanOptions o;
    o.n_ctx = r.n_ctx;
    o.n_seq = r.n_seq > 0 ? r.n_seq : 1;
    o.max_batch = r.max_batch > 0 ? r.max_batch : 256;
    o.kv_type = r.kv_type.value_or(kernels::DType::F16);
    o.goal = r.goal;
    o.margin_fraction = r.margin_fraction;
    return auto_plan(c, w, devices, o);
  }
  Placement p;
  std::string how;
  if (!r.placement.empty()) {
    STRATA_ASSIGN_OR_RETURN(p, load_placement_file(r.placement, c.n_layers));
    if (r.n_ctx > 0) p.n_ctx = r.n_ctx;
    if (r.n_seq > 0) p.n_seq = r.n_seq;
    if (r.max_batch > 0) p.max_batch = r.max_batch;
    if (r.kv_type) p.kv_type = *r.kv_type;
    how = "from " + r.placement;
  } else {
    STRATA_ASSIGN_OR_RETURN(p, from_split_options(c, devices, r));
    p.n_ctx = r.n_ctx > 0 ? r.n_ctx : default_n_ctx(c);
    p.n_seq = r.n_seq > 0 ? r.n_seq : 1;
    p.max_batch = r.max_batch > 0 ? r.max_batch : 256;
    p.kv_type = r.kv_type.value_or(kernels::DType::F16);
    how = std::string("split mode ") + split_mode_name(r.split_mode) +
          (r.gpu_layers >= 0 ? ", gpu layers " + std::to_string(r.gpu_layers) : "") +
          (r.kv_on_cpu ? ", KV on the CPU" : "");
  }
  PlanResult res;
  res.placement = std::move(p);
  STRATA_ASSIGN_OR_RETURN(res.memory, estimate_memory(res.placement, c, w, devices));  // validates
  STRATA_ASSIGN_OR_RETURN(res.cost, estimate_cost(res.placement, c, w, devices));
  STRATA_ASSIGN_OR_RETURN(res.cost_full_context, estimate_cost(res.placement, c, w, devices, res.placement.n_ctx));
  for (const DeviceMemory& m : res.memory.devices) {
    double ms = 0;
    for (const auto& d : res.cost.devices)
      if (d.device == m.device) ms = d.decode_ms;
    std::string what = ranges_on(res.placement, m.device);
    if (m.has_embedding) what += what.empty() ? "embedding" : " + embedding";
    if (m.has_head) what += what.empty() ? "head" : " + head";
    if (what.empty()) what = "KV cache";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f ms per token", ms);
    res.explanation.push_back(m.device + ": " + what + ", " + format_bytes(m.total_bytes) + " of " +
                              format_bytes(m.capacity_bytes) + ", " + buf + ": " + how +
                              (m.fits ? "" : "; does not fit, short " + format_bytes(m.shortfall_bytes)));
  }
  char buf[160];
  std::snprintf(buf, sizeof buf, "plan: %zu stage%s, predicted %.3f ms per token, %.1f tokens/s", res.cost.stages.size(),
                res.cost.stages.size() == 1 ? "" : "s", res.cost.decode_ms_per_token, res.cost.decode_tokens_per_s);
  res.explanation.push_back(buf);
  return res;
}

Expected<Placement> placement_from_options(const model::ModelConfig& c, const model::ModelWeights& w,
                                           const std::vector<DeviceInfo>& devices, const PlacementRequest& r) {
  if (r.placement == "auto") {
    STRATA_ASSIGN_OR_RETURN(PlanResult res, plan_from_options(c, w, devices, r));
    return res.placement;
  }
  Placement p;
  if (!r.placement.empty()) {
    STRATA_ASSIGN_OR_RETURN(p, load_placement_file(r.placement, c.n_layers));
    if (r.n_ctx > 0) p.n_ctx = r.n_ctx;
    if (r.n_seq > 0) p.n_seq = r.n_seq;
    if (r.max_batch > 0) p.max_batch = r.max_batch;
    if (r.kv_type) p.kv_type = *r.kv_type;
  } else {
    STRATA_ASSIGN_OR_RETURN(p, from_split_options(c, devices, r));
    p.n_ctx = r.n_ctx > 0 ? r.n_ctx : default_n_ctx(c);
    p.n_seq = r.n_seq > 0 ? r.n_seq : 1;
    p.max_batch = r.max_batch > 0 ? r.max_batch : 256;
    p.kv_type = r.kv_type.value_or(kernels::DType::F16);
  }
  STRATA_RETURN_IF_ERROR(validate_placement(p, c, w, devices));
  return p;
}

bool is_default_request(const PlacementRequest& r) {
  return r.placement.empty() && r.split_mode == SplitMode::Layer && r.split_ratio.empty() && r.gpu_layers < 0 &&
         !r.kv_on_cpu && r.main_device.empty();
}

Expected<PlanResult> plan_that_fits(const model::ModelConfig& c, const model::ModelWeights& w,
                                    const std::vector<DeviceInfo>& devices, const PlacementRequest& r) {
  Expected<PlanResult> asked = plan_from_options(c, w, devices, r);
  Status fits = asked.ok() ? check_fits(asked->memory) : Status(asked.error());
  if (fits.ok()) return asked;
  if (!is_default_request(r)) return fits.error();
  PlacementRequest automatic = r;
  automatic.placement = "auto";
  Expected<PlanResult> chosen = plan_from_options(c, w, devices, automatic);
  if (!chosen.ok()) return chosen.error();
  std::string why = fits.error().message;
  for (char& ch : why)
    if (ch == '\n') ch = ' ';
  chosen->explanation.insert(chosen->explanation.begin(),
                             "the default layer split does not fit (" + why + "): using the auto plan (" +
                                 plan_goal_name(r.goal) + ")");
  return chosen;
}

}  // namespace strata::plan
