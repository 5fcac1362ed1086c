// engine/plan/placement_options.cpp — llama.cpp-style options turned into a Placement.
// Builds plain data and delegates sizes to memory_estimate / cost_model; touches no device.
#include "engine/plan/placement_options.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <limits>
#include <map>
#include <regex>
#include <sstream>

#include "engine/plan/cost_model.h"
#include "engine/plan/memory_estimate.h"
#include "engine/plan/placement_validate.h"
#include "engine/plan/tensor_split.h"

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
    if (d.caps.host_cpu) return &d;
  return nullptr;
}

// The default layer split (split mode layer, no split_ratio, every block offloaded, two or more
// accelerators) balances the stages by predicted decode time instead of by memory: contiguous
// block ranges in device order whose slowest stage, counting the embedding lookup on the first
// stage and the output head on the last (a large vocabulary's head weighs several blocks), is as
// fast as it can be. A split that does not fit the devices' memory is not taken: the
// llama.cpp split by memory share (from_split_options) stays. Returns whether it changed p.
bool balance_default_layer_split(Placement& p, const model::ModelConfig& c, const model::ModelWeights& w,
                                 const std::vector<DeviceInfo>& devices, const PlacementRequest& r) {
  if (r.split_mode != SplitMode::Layer || !r.split_ratio.empty() || r.gpu_layers >= 0) return false;
  std::vector<const DeviceInfo*> accel;
  for (const auto& d : devices)
    if (!d.caps.host_cpu) accel.push_back(&d);
  const int64_t n = c.n_layers;
  const size_t k_devices = accel.size();
  if (k_devices < 2 || n < 2 || static_cast<int64_t>(w.layers.size()) != n) return false;
  const LayerShard whole = whole_layer(c);
  // ms[k][b]: block b on accelerator k per decoded token; prefix sums for range costs.
  std::vector<std::vector<double>> prefix(k_devices, std::vector<double>(static_cast<size_t>(n) + 1, 0.0));
  for (size_t k = 0; k < k_devices; ++k)
    for (int64_t b = 0; b < n; ++b)
      prefix[k][static_cast<size_t>(b) + 1] =
          prefix[k][static_cast<size_t>(b)] + block_ms(c, w.layers[static_cast<size_t>(b)], whole, true, *accel[k], 1);
  auto range_ms = [&](size_t k, int64_t i, int64_t j) {
    if (i == j) return 0.0;
    double t = prefix[k][static_cast<size_t>(j)] - prefix[k][static_cast<size_t>(i)];
    if (i == 0) t += embedding_ms(c, w, *accel[k]);
    if (j == n) t += head_ms(c, w, *accel[k], 1);
    return t;
  };
  // best[k][j]: the smallest slowest-stage time placing blocks [0, j) on accelerators 0..k;
  // cut[k][j]: where accelerator k's range begins in that solution.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(k_devices, std::vector<double>(static_cast<size_t>(n) + 1, inf));
  std::vector<std::vector<int64_t>> cut(k_devices, std::vector<int64_t>(static_cast<size_t>(n) + 1, 0));
  for (int64_t j = 0; j <= n; ++j) best[0][static_cast<size_t>(j)] = range_ms(0, 0, j);
  for (size_t k = 1; k < k_devices; ++k) {
    for (int64_t j = 0; j <= n; ++j) {
      for (int64_t i = 0; i <= j; ++i) {
        const double t = std::max(best[k - 1][static_cast<size_t>(i)], range_ms(k, i, j));
        // Ties go to the later cut: earlier devices take more blocks, as llama.cpp's split does.
        if (t <= best[k][static_cast<size_t>(j)]) {
          best[k][static_cast<size_t>(j)] = t;
          cut[k][static_cast<size_t>(j)] = i;
        }
      }
    }
  }
  std::vector<int64_t> begin(k_devices, 0);
  int64_t end = n;
  for (size_t k = k_devices; k-- > 0;) {
    begin[k] = k == 0 ? 0 : cut[k][static_cast<size_t>(end)];
    end = begin[k];
  }
  Placement balanced = p;
  int64_t first_block_device = -1, last_block_device = -1;
  for (size_t k = 0; k < k_devices; ++k) {
    const int64_t stop = k + 1 < k_devices ? begin[k + 1] : n;
    for (int64_t b = begin[k]; b < stop; ++b) balanced.layers[static_cast<size_t>(b)].target.devices = {accel[k]->id};
    if (stop > begin[k]) {
      if (first_block_device < 0) first_block_device = static_cast<int64_t>(k);
      last_block_device = static_cast<int64_t>(k);
    }
  }
  balanced.embedding.devices = {accel[static_cast<size_t>(first_block_device)]->id};
  balanced.head.devices = {accel[static_cast<size_t>(last_block_device)]->id};
  bool changed = false;
  for (int64_t b = 0; b < n; ++b)
    changed |= balanced.layers[static_cast<size_t>(b)].target.devices != p.layers[static_cast<size_t>(b)].target.devices;
  changed |= balanced.head.devices != p.head.devices || balanced.embedding.devices != p.embedding.devices;
  if (!changed) return false;
  Expected<MemoryEstimate> memory = estimate_memory(balanced, c, w, devices);
  if (!memory.ok() || !check_fits(*memory, r.margin_fraction).ok()) return false;
  p = std::move(balanced);
  return true;
}

Expected<Placement> from_split_options(const model::ModelConfig& c, const std::vector<DeviceInfo>& devices,
                                       const PlacementRequest& r) {
  const int64_t n = c.n_layers;
  if (r.gpu_layers < -1) return bad("gpu_layers " + std::to_string(r.gpu_layers) + " must be >= 0 (or -1 for all)");
  std::vector<DeviceInfo> accel;
  for (const auto& d : devices)
    if (!d.caps.host_cpu) accel.push_back(d);
  const DeviceInfo* cpu = first_cpu(devices);
  if (accel.empty()) {
    if (!cpu) return bad("no devices to place the model on");
    // No accelerator: the CPUs take the offloaded part. Several of them (one per rank under
    // mpirun, "--devices r0:cpu,r1:cpu"): the blocks spread over all, as --split-mode layer
    // spreads them over GPUs; a user who names two ranks' devices means both to work.
    for (const auto& d : devices)
      if (d.caps.host_cpu) accel.push_back(d);
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

Expected<std::vector<std::string>> parse_overrides(const std::vector<std::string>& arguments) {
  std::vector<std::string> out;
  for (const std::string& arg : arguments) {
    size_t start = 0;
    while (start <= arg.size()) {
      size_t end = arg.find(',', start);
      if (end == std::string::npos) end = arg.size();
      const std::string item = arg.substr(start, end - start);
      const size_t eq = item.rfind('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
        return bad("override '" + item + "' is not PATTERN=DEVICE (e.g. \"exps=cpu\")");
      out.push_back(item);
      start = end + 1;
    }
  }
  return out;
}

Expected<int64_t> parse_experts_on_cpu(const std::string& text) {
  if (text == "all") return int64_t{-1};
  if (text.empty() || text.size() > 9 || !std::all_of(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
    return bad("--experts-on-cpu '" + text + "' is neither a number of blocks nor 'all'");
  return static_cast<int64_t>(std::stoll(text));
}

namespace {

// A device named the way llama.cpp names buffer types ("CPU", "CUDA0") or by its own id.
Expected<std::string> override_device(const std::string& name, const std::vector<DeviceInfo>& devices) {
  for (const DeviceInfo& d : devices)
    if (d.id == name) return d.id;
  auto lower = [](std::string t) {
    for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return t;
  };
  for (const DeviceInfo& d : devices)
    if (lower(d.id) == lower(name)) return d.id;
  return Error{Code::NotFound, "override device '" + name + "' is not among: " + device_id_list(devices)};
}

}  // namespace

Status apply_part_options(Placement& p, const model::ModelConfig& c, const model::ModelWeights& w,
                          const std::vector<DeviceInfo>& devices, const PlacementRequest& r) {
  if (r.experts_on_cpu != 0) {
    if (!c.is_moe())
      return bad("--experts-on-cpu: the model's blocks have a dense FFN, not experts (use --override 'ffn=cpu' to "
                 "place the FFN)");
    const DeviceInfo* cpu = first_cpu(devices);
    if (!cpu) return bad("--experts-on-cpu needs a CPU device (devices: " + device_id_list(devices) + ")");
    const int64_t n = r.experts_on_cpu < 0 ? c.n_layers : std::min(r.experts_on_cpu, c.n_layers);
    for (int64_t i = 0; i < n; ++i) p.layers[static_cast<size_t>(i)].experts = {ExpertRange{0, kAllExperts, cpu->id}};
  }
  if (!r.overrides.empty()) {
    struct Rule {
      std::regex pattern;
      std::string text, device;
    };
    std::vector<Rule> rules;
    for (const std::string& item : r.overrides) {
      const size_t eq = item.rfind('=');
      if (eq == std::string::npos) return bad("override '" + item + "' is not PATTERN=DEVICE");
      Rule rule;
      rule.text = item.substr(0, eq);
      try {
        rule.pattern = std::regex(rule.text);
      } catch (const std::regex_error& e) {
        return bad("override pattern '" + rule.text + "' is not a regular expression: " + e.what());
      }
      STRATA_ASSIGN_OR_RETURN(rule.device, override_device(item.substr(eq + 1), devices));
      rules.push_back(std::move(rule));
    }
    // Each part takes the device of its tensors' matching rules; a part's tensors must agree.
    struct Choice {
      std::string device, tensor;
    };
    std::map<std::pair<int64_t, int>, Choice> chosen;  // (layer or -1 embedding / -2 head, part) -> device
    auto consider = [&](const model::TensorView& t, int64_t layer, int part) -> Status {
      if (!t.present()) return {};
      for (const Rule& rule : rules) {
        if (!std::regex_search(t.name, rule.pattern)) continue;
        auto [it, fresh] = chosen.emplace(std::make_pair(layer, part), Choice{rule.device, t.name});
        if (!fresh && it->second.device != rule.device)
          return bad("overrides place '" + it->second.tensor + "' on " + it->second.device + " but '" + t.name +
                     "' of the same part on " + rule.device + "; a part (attention, ffn, experts) moves whole");
        return {};
      }
      return {};
    };
    STRATA_RETURN_IF_ERROR(consider(w.token_embd, -1, 0));
    STRATA_RETURN_IF_ERROR(consider(w.output_norm, -2, 0));
    if (w.output_norm_b.present()) STRATA_RETURN_IF_ERROR(consider(w.output_norm_b, -2, 0));
    if (!c.tied_output) STRATA_RETURN_IF_ERROR(consider(w.output, -2, 0));
    for (int64_t i = 0; i < c.n_layers; ++i) {
      const model::LayerWeights& l = w.layers[static_cast<size_t>(i)];
      for (const model::LayerTensor& t : model::layer_tensors())
        STRATA_RETURN_IF_ERROR(consider(l.*t.view, i, static_cast<int>(t.part)));
    }
    for (const auto& [key, choice] : chosen) {
      const auto [layer, part] = key;
      if (layer == -1) {
        p.embedding.devices = {choice.device};
        p.embedding.ratio.clear();
        continue;
      }
      if (layer == -2) {
        p.head.devices = {choice.device};
        p.head.ratio.clear();
        continue;
      }
      LayerPlacement& lp = p.layers[static_cast<size_t>(layer)];
      switch (static_cast<PartKind>(part)) {
        case PartKind::Attention:
          lp.target = Target{{choice.device}, {}};
          break;
        case PartKind::Ffn:
          lp.ffn_device = choice.device;
          break;
        case PartKind::Experts:
          lp.experts = {ExpertRange{0, kAllExperts, choice.device}};
          break;
      }
    }
  }
  // Parts the options sent where they would run anyway are not placed apart (a file's own
  // parts are left as written, for validation to judge).
  if (r.experts_on_cpu == 0 && r.overrides.empty()) return {};
  for (LayerPlacement& lp : p.layers) {
    if (!lp.target.is_group() && lp.ffn_device == lp.target.devices[0]) lp.ffn_device.clear();
    const std::string ffn_on = !lp.ffn_device.empty()  ? lp.ffn_device
                               : lp.target.is_group() ? std::string()
                                                      : lp.target.devices[0];
    if (lp.experts.size() == 1 && lp.experts[0].begin == 0 && lp.experts[0].end == kAllExperts &&
        lp.experts[0].device == ffn_on)
      lp.experts.clear();
  }
  return {};
}

Expected<PlanResult> plan_from_options(const model::ModelConfig& c, const model::ModelWeights& w,
                                       const std::vector<DeviceInfo>& devices, const PlacementRequest& r) {
  if (r.placement == "auto") {
    if (r.experts_on_cpu != 0 || !r.overrides.empty())
      return bad("--placement auto places the parts of blocks itself; leave out --experts-on-cpu and --override "
                 "(or start from its plan file)");
    AutoPlanOptions o;
    o.n_ctx = r.n_ctx;
    o.n_seq = r.n_seq > 0 ? r.n_seq : 1;
    o.max_batch = r.max_batch > 0 ? r.max_batch : 256;
    o.kv_type = r.kv_type.value_or(kernels::DType::F16);
    o.swa_full = r.swa_full;
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
    if (r.swa_full) p.swa_full = true;
    how = "from " + r.placement;
  } else {
    STRATA_ASSIGN_OR_RETURN(p, from_split_options(c, devices, r));
    p.n_ctx = r.n_ctx > 0 ? r.n_ctx : default_n_ctx(c);
    p.n_seq = r.n_seq > 0 ? r.n_seq : 1;
    p.max_batch = r.max_batch > 0 ? r.max_batch : 256;
    p.kv_type = r.kv_type.value_or(kernels::DType::F16);
    p.swa_full = r.swa_full;
    const bool by_time = balance_default_layer_split(p, c, w, devices, r);
    int cpus = 0;
    for (const auto& d : devices) cpus += d.caps.host_cpu ? 1 : 0;
    const bool only_cpus = cpus == static_cast<int>(devices.size());
    how = std::string("split mode ") + split_mode_name(r.split_mode) + (by_time ? " (stages balanced by time)" : "") +
          (only_cpus && cpus > 1 ? ", blocks spread over the " + std::to_string(cpus) + " CPUs named (" + ids_of(devices) + ")"
                                 : std::string()) +
          (r.gpu_layers >= 0 ? ", gpu layers " + std::to_string(r.gpu_layers) : "") +
          (r.kv_on_cpu ? ", KV on the CPU" : "");
    if (r.experts_on_cpu != 0)
      how += r.experts_on_cpu < 0 ? ", experts on the CPU"
                                  : ", experts of the first " + std::to_string(r.experts_on_cpu) + " blocks on the CPU";
    if (!r.overrides.empty()) how += ", " + std::to_string(r.overrides.size()) + " override(s)";
  }
  STRATA_RETURN_IF_ERROR(apply_part_options(p, c, w, devices, r));
  if (r.placement.empty()) {  // a file's placement is the user's: validation judges it
    const std::string moved = attention_on_capable_devices(p, c, devices);
    if (!moved.empty()) how += ", " + moved;
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
  char buf[256];
  if (res.cost.n_seq > 1) {
    std::snprintf(buf, sizeof buf,
                  "plan: %zu stage%s, predicted %.3f ms per token for one sequence; %lld sequences as %lld "
                  "micro-batch%s of %lld: %.3f ms per round, %.1f tokens/s",
                  res.cost.stages.size(), res.cost.stages.size() == 1 ? "" : "s", res.cost.decode_ms_per_token,
                  static_cast<long long>(res.cost.n_seq), static_cast<long long>(res.cost.decode_micro_batches),
                  res.cost.decode_micro_batches == 1 ? "" : "es",
                  static_cast<long long>(res.cost.decode_rows_per_micro_batch), res.cost.decode_round_ms,
                  res.cost.decode_tokens_per_s);
  } else {
    std::snprintf(buf, sizeof buf, "plan: %zu stage%s, predicted %.3f ms per token, %.1f tokens/s",
                  res.cost.stages.size(), res.cost.stages.size() == 1 ? "" : "s", res.cost.decode_ms_per_token,
                  res.cost.decode_tokens_per_s);
  }
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
    if (r.swa_full) p.swa_full = true;
  } else {
    STRATA_ASSIGN_OR_RETURN(p, from_split_options(c, devices, r));
    p.n_ctx = r.n_ctx > 0 ? r.n_ctx : default_n_ctx(c);
    p.n_seq = r.n_seq > 0 ? r.n_seq : 1;
    p.max_batch = r.max_batch > 0 ? r.max_batch : 256;
    p.kv_type = r.kv_type.value_or(kernels::DType::F16);
    p.swa_full = r.swa_full;
    balance_default_layer_split(p, c, w, devices, r);
  }
  STRATA_RETURN_IF_ERROR(apply_part_options(p, c, w, devices, r));
  STRATA_RETURN_IF_ERROR(validate_placement(p, c, w, devices));
  return p;
}

bool is_default_request(const PlacementRequest& r) {
  return r.placement.empty() && r.split_mode == SplitMode::Layer && r.split_ratio.empty() && r.gpu_layers < 0 &&
         !r.kv_on_cpu && r.main_device.empty() && r.experts_on_cpu == 0 && r.overrides.empty();
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
