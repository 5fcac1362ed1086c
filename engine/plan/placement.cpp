// engine/plan/placement.cpp — stages of a placement and its JSON form (docs/placement.md).
// Structural checks only; must not depend on devices or model weights (see placement_validate).
#include "engine/plan/placement.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace strata::plan {

std::vector<std::string> Placement::devices() const {
  std::vector<std::string> out;
  auto add = [&](const std::string& id) {
    if (!id.empty() && std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
  };
  for (const auto& d : embedding.devices) add(d);
  for (const auto& l : layers) {
    for (const auto& d : l.target.devices) add(d);
    add(l.kv_device);
    add(l.ffn_device);
    for (const auto& r : l.experts) add(r.device);
  }
  for (const auto& d : head.devices) add(d);
  return out;
}

std::vector<Stage> stages_of(const Placement& p) {
  std::vector<Stage> stages;
  for (size_t i = 0; i < p.layers.size(); ++i) {
    const LayerPlacement& l = p.layers[i];
    if (!stages.empty() && stages.back().target == l.target && stages.back().kv_device == l.kv_device &&
        stages.back().ffn_device == l.ffn_device && stages.back().experts == l.experts) {
      stages.back().end_layer = static_cast<int64_t>(i) + 1;
      continue;
    }
    stages.push_back(Stage{l.target, l.kv_device, static_cast<int64_t>(i), static_cast<int64_t>(i) + 1, l.ffn_device,
                           l.experts});
  }
  return stages;
}

std::vector<HeadShare> head_shares(const Placement& p, int64_t n_vocab,
                                   const std::function<int(const std::string&)>& device_rank) {
  const std::string& head = p.head.devices.empty() ? std::string() : p.head.devices[0];
  const std::vector<HeadShare> whole = {HeadShare{head, 0, n_vocab}};
  if (p.layers.empty() || head.empty()) return whole;
  const LayerPlacement& last = p.layers.back();
  const Target& group = last.target;
  if (!group.is_group() || last.has_parts() || !last.kv_device.empty()) return whole;
  if (std::find(group.devices.begin(), group.devices.end(), head) == group.devices.end()) return whole;
  const int rank = device_rank(head);
  for (const std::string& id : group.devices)
    if (device_rank(id) != rank) return whole;
  const size_t k = group.devices.size();
  std::vector<double> ratio = group.ratio;
  if (ratio.size() != k) ratio.assign(k, 1.0);
  double total = 0;
  for (double r : ratio) total += r > 0 ? r : 0;
  if (!(total > 0)) return whole;
  // Largest remainder: every row to one member, in member order.
  std::vector<int64_t> rows(k);
  std::vector<std::pair<double, size_t>> rest;
  int64_t given = 0;
  for (size_t i = 0; i < k; ++i) {
    const double exact = static_cast<double>(n_vocab) * std::max(ratio[i], 0.0) / total;
    rows[i] = static_cast<int64_t>(exact);
    given += rows[i];
    rest.emplace_back(exact - static_cast<double>(rows[i]), i);
  }
  std::stable_sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t j = 0; given < n_vocab; ++j, ++given) ++rows[rest[j % k].second];
  std::vector<HeadShare> shares;
  int64_t at = 0;
  for (size_t i = 0; i < k; ++i) {
    if (rows[i] == 0) continue;
    shares.push_back(HeadShare{group.devices[i], at, at + rows[i]});
    at += rows[i];
  }
  return shares;
}

int64_t concurrent_stage_count(const std::vector<std::vector<std::string>>& stage_devices) {
  std::vector<std::string> taken;
  int64_t count = 0;
  for (const std::vector<std::string>& devices : stage_devices) {
    const bool shares = std::any_of(devices.begin(), devices.end(), [&](const std::string& d) {
      return std::find(taken.begin(), taken.end(), d) != taken.end();
    });
    if (shares || devices.empty()) continue;
    taken.insert(taken.end(), devices.begin(), devices.end());
    ++count;
  }
  return std::max<int64_t>(count, 1);
}

std::vector<BlockUnit> units_of(const LayerPlacement& l, int64_t index, int64_t n_expert) {
  std::vector<BlockUnit> units;
  BlockUnit attention;
  attention.layer = index;
  attention.kind = PartKind::Attention;
  attention.target = l.target;
  if (!l.has_parts()) {
    attention.whole_block = true;
    attention.last_of_block = true;
    return {attention};
  }
  units.push_back(attention);
  BlockUnit ffn;
  ffn.layer = index;
  ffn.kind = PartKind::Ffn;
  if (l.ffn_device.empty()) {
    ffn.target = l.target;
  } else {
    ffn.target.devices = {l.ffn_device};
  }
  ffn.last_of_block = l.experts.empty();
  units.push_back(ffn);
  for (size_t r = 0; r < l.experts.size(); ++r) {
    BlockUnit e;
    e.layer = index;
    e.kind = PartKind::Experts;
    e.target.devices = {l.experts[r].device};
    e.expert_begin = l.experts[r].begin;
    e.expert_end = l.experts[r].end == kAllExperts ? n_expert : l.experts[r].end;
    e.last_of_block = r + 1 == l.experts.size();
    units.push_back(e);
  }
  return units;
}

namespace {

using nlohmann::json;

std::string range_text(int64_t first, int64_t last) {
  if (first == last) return "layer " + std::to_string(first);
  return "layers " + std::to_string(first) + "-" + std::to_string(last);
}

std::string type_name(const json& j) {
  if (j.is_number_integer() || j.is_number_unsigned()) return "an integer";
  if (j.is_number_float()) return "a number";
  if (j.is_array()) return "an array";
  if (j.is_object()) return "an object";
  return std::string("a ") + j.type_name();
}

Error bad(const std::string& message) { return Error{Code::InvalidArgument, message}; }

// A ratio written as an integer when it is one, so files stay readable ("ratio": [2, 1]).
json ratio_json(double r) {
  if (std::isfinite(r) && r == std::floor(r) && std::fabs(r) < 9.0e15) return json(static_cast<int64_t>(r));
  return json(r);
}

json target_json(const Target& t) {
  json j = json::object();
  if (t.devices.size() == 1) {
    j["device"] = t.devices[0];
  } else {
    j["group"] = t.devices;
    json ratio = json::array();
    for (double r : t.ratio) ratio.push_back(ratio_json(r));
    j["ratio"] = ratio;
  }
  return j;
}

Status check_keys(const json& obj, const std::string& where, std::initializer_list<const char*> allowed) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool known = false;
    for (const char* a : allowed) known = known || it.key() == a;
    if (!known) {
      std::string list;
      for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
      return bad(where + ": unknown field '" + it.key() + "' (expected: " + list + ")");
    }
  }
  return {};
}

Expected<std::string> device_id(const json& j, const std::string& where) {
  if (!j.is_string()) return bad(where + " must be a device id string, not " + type_name(j));
  std::string s = j.get<std::string>();
  if (s.empty()) return bad(where + " is an empty device id");
  return s;
}

// {"device": "gpu0"} or {"group": ["gpu0", "gpu1"], "ratio": [2, 1]}; other keys are checked
// by the caller.
Expected<Target> parse_target(const json& obj, const std::string& where) {
  Target t;
  const bool has_device = obj.contains("device");
  const bool has_group = obj.contains("group");
  if (has_device && has_group) return bad(where + ": give either 'device' or 'group', not both");
  if (!has_device && !has_group) return bad(where + ": needs 'device' (one device) or 'group' (tensor split)");
  if (has_device) {
    if (obj.contains("ratio")) return bad(where + ": 'ratio' needs a 'group'; one 'device' takes no ratio");
    STRATA_ASSIGN_OR_RETURN(std::string id, device_id(obj["device"], where + ": 'device'"));
    t.devices.push_back(std::move(id));
    return t;
  }
  const json& group = obj["group"];
  if (!group.is_array()) return bad(where + ": 'group' must be an array of device ids, not " + type_name(group));
  if (group.size() < 2)
    return bad(where + ": a 'group' needs at least 2 devices, has " + std::to_string(group.size()) +
               " (use 'device' for one)");
  for (size_t i = 0; i < group.size(); ++i) {
    STRATA_ASSIGN_OR_RETURN(std::string id, device_id(group[i], where + ": 'group'[" + std::to_string(i) + "]"));
    if (std::find(t.devices.begin(), t.devices.end(), id) != t.devices.end())
      return bad(where + ": device '" + id + "' appears twice in the group");
    t.devices.push_back(std::move(id));
  }
  if (!obj.contains("ratio")) {
    t.ratio.assign(t.devices.size(), 1.0);  // equal shares
    return t;
  }
  const json& ratio = obj["ratio"];
  if (!ratio.is_array()) return bad(where + ": 'ratio' must be an array of numbers, not " + type_name(ratio));
  if (ratio.size() != t.devices.size())
    return bad(where + ": 'ratio' has " + std::to_string(ratio.size()) + " values for a group of " +
               std::to_string(t.devices.size()) + " devices");
  for (size_t i = 0; i < ratio.size(); ++i) {
    if (!ratio[i].is_number())
      return bad(where + ": 'ratio'[" + std::to_string(i) + "] must be a number, not " + type_name(ratio[i]));
    const double r = ratio[i].get<double>();
    if (!(r > 0.0) || !std::isfinite(r)) {
      std::ostringstream os;
      os << where << ": 'ratio'[" << i << "] is " << r << " for device '" << t.devices[i] << "'; ratios must be > 0";
      return bad(os.str());
    }
    t.ratio.push_back(r);
  }
  return t;
}

Expected<int64_t> parse_layer_number(const std::string& text, const std::string& where) {
  if (text.empty() || text.size() > 9 || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return bad(where + ": '" + text + "' is not a layer number");
  return static_cast<int64_t>(std::stoll(text));
}

// "layers": 5, "5" or "0-17" -> [first, last] inclusive.
Expected<std::pair<int64_t, int64_t>> parse_range(const json& j, const std::string& where) {
  if (j.is_number_integer() || j.is_number_unsigned()) {
    const int64_t v = j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)
                          ? INT64_MAX
                          : j.get<int64_t>();
    if (v < 0) return bad(where + ": layer " + std::to_string(v) + " is negative");
    return std::make_pair(v, v);
  }
  if (!j.is_string())
    return bad(where + ": 'layers' must be a layer number or a range string like \"0-17\", not " + type_name(j));
  const std::string s = j.get<std::string>();
  const size_t dash = s.find('-');
  if (dash == std::string::npos) {
    STRATA_ASSIGN_OR_RETURN(int64_t v, parse_layer_number(s, where));
    return std::make_pair(v, v);
  }
  if (dash == 0) return bad(where + ": layer range '" + s + "' starts with '-' (negative layers do not exist)");
  STRATA_ASSIGN_OR_RETURN(int64_t a, parse_layer_number(s.substr(0, dash), where));
  STRATA_ASSIGN_OR_RETURN(int64_t b, parse_layer_number(s.substr(dash + 1), where));
  if (b < a) return bad(where + ": layer range '" + s + "' ends before it starts");
  return std::make_pair(a, b);
}

// "experts": "cpu" (all of them), or [{"experts": "0-63", "device": "gpu0"}, {"experts": "64-",
// "device": "cpu"}] (ranges inclusive; "N-" runs to the last expert). Order, overlaps and
// coverage are checked against the model in validate_placement.
Expected<std::vector<ExpertRange>> parse_experts(const json& j, const std::string& where) {
  if (j.is_string()) {
    STRATA_ASSIGN_OR_RETURN(std::string id, device_id(j, where));
    return std::vector<ExpertRange>{ExpertRange{0, kAllExperts, id}};
  }
  if (!j.is_array() || j.empty())
    return bad(where + " must be a device id or a non-empty array of {\"experts\": \"0-63\", \"device\": id}, not " +
               type_name(j));
  std::vector<ExpertRange> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string at = where + "[" + std::to_string(i) + "]";
    const json& r = j[i];
    if (!r.is_object()) return bad(at + " must be an object, not " + type_name(r));
    STRATA_RETURN_IF_ERROR(check_keys(r, at, {"experts", "device"}));
    if (!r.contains("experts") || !r.contains("device")) return bad(at + ": needs 'experts' and 'device'");
    ExpertRange range;
    STRATA_ASSIGN_OR_RETURN(range.device, device_id(r["device"], at + ": 'device'"));
    const json& e = r["experts"];
    if (e.is_string() && !e.get<std::string>().empty() && e.get<std::string>().back() == '-') {
      const std::string s = e.get<std::string>();
      STRATA_ASSIGN_OR_RETURN(range.begin, parse_layer_number(s.substr(0, s.size() - 1), at + ": expert"));
      range.end = kAllExperts;
    } else {
      STRATA_ASSIGN_OR_RETURN(auto span, parse_range(e, at + ": expert"));
      range.begin = span.first;
      range.end = span.second + 1;
    }
    out.push_back(std::move(range));
  }
  return out;
}

Expected<int64_t> parse_count(const json& top, const char* key, int64_t fallback, bool required) {
  if (!top.contains(key)) {
    if (required) return bad(std::string("placement: missing '") + key + "'");
    return fallback;
  }
  const json& j = top[key];
  if (!j.is_number_integer() && !j.is_number_unsigned())
    return bad(std::string("placement: '") + key + "' must be an integer, not " + type_name(j));
  if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    return bad(std::string("placement: '") + key + "' is too large");
  return j.get<int64_t>();
}

Expected<Target> parse_single_part(const json& top, const char* key) {
  if (!top.contains(key)) return bad(std::string("placement: missing '") + key + "'");
  const json& obj = top[key];
  const std::string where = key;
  if (!obj.is_object()) return bad(where + " must be an object like {\"device\": \"gpu0\"}, not " + type_name(obj));
  STRATA_RETURN_IF_ERROR(check_keys(obj, where, {"device", "group", "ratio"}));
  return parse_target(obj, where);
}

}  // namespace

Expected<kernels::DType> kv_type_from_name(const std::string& name) {
  if (name == "f16" || name == "F16") return kernels::DType::F16;
  if (name == "f32" || name == "F32") return kernels::DType::F32;
  if (name == "q8_0" || name == "Q8_0") return kernels::DType::Q8_0;
  return bad("KV cache type '" + name + "' is not one of f32, f16, q8_0");
}

nlohmann::json to_json(const Placement& p) {
  json j = json::object();
  j["version"] = 1;
  j["n_ctx"] = p.n_ctx;
  j["n_seq"] = p.n_seq;
  j["max_batch"] = p.max_batch;
  if (p.kv_type != kernels::DType::F16) j["kv_type"] = kernels::dtype_name(p.kv_type);  // f16: the default
  if (p.swa_full) j["swa_full"] = true;  // false: the default
  j["embedding"] = target_json(p.embedding);
  json layers = json::array();
  for (const Stage& s : stages_of(p)) {
    json entry = json::object();
    if (s.end_layer - s.first_layer == 1) {
      entry["layers"] = s.first_layer;
    } else {
      entry["layers"] = std::to_string(s.first_layer) + "-" + std::to_string(s.end_layer - 1);
    }
    const json target = target_json(s.target);
    for (auto it = target.begin(); it != target.end(); ++it) entry[it.key()] = it.value();
    if (!s.kv_device.empty()) entry["kv_device"] = s.kv_device;
    if (!s.ffn_device.empty()) entry["ffn_device"] = s.ffn_device;
    if (s.experts.size() == 1 && s.experts[0].begin == 0 && s.experts[0].end == kAllExperts) {
      entry["experts"] = s.experts[0].device;
    } else if (!s.experts.empty()) {
      json ranges = json::array();
      for (const ExpertRange& r : s.experts) {
        json range = json::object();
        range["device"] = r.device;
        range["experts"] = r.end == kAllExperts ? std::to_string(r.begin) + "-"
                           : r.end - r.begin == 1 ? std::to_string(r.begin)
                                                  : std::to_string(r.begin) + "-" + std::to_string(r.end - 1);
        ranges.push_back(range);
      }
      entry["experts"] = ranges;
    }
    layers.push_back(entry);
  }
  j["layers"] = layers;
  j["head"] = target_json(p.head);
  return j;
}

Expected<Placement> placement_from_json(const nlohmann::json& top, int64_t n_layers) {
  if (n_layers < 1) return bad("placement: the model has " + std::to_string(n_layers) + " layers");
  if (!top.is_object()) return bad("placement must be a JSON object, not " + type_name(top));
  STRATA_RETURN_IF_ERROR(
      check_keys(top, "placement", {"version", "n_ctx", "n_seq", "max_batch", "kv_type", "swa_full", "embedding", "layers", "head"}));
  STRATA_ASSIGN_OR_RETURN(int64_t version, parse_count(top, "version", 1, true));
  if (version != 1) return bad("placement: version " + std::to_string(version) + " is not supported (only 1)");

  Placement p;
  STRATA_ASSIGN_OR_RETURN(p.n_ctx, parse_count(top, "n_ctx", 0, true));
  STRATA_ASSIGN_OR_RETURN(p.n_seq, parse_count(top, "n_seq", 1, false));
  STRATA_ASSIGN_OR_RETURN(p.max_batch, parse_count(top, "max_batch", 256, false));
  if (top.contains("kv_type")) {
    if (!top["kv_type"].is_string()) return bad("placement: 'kv_type' must be a string (f32, f16, q8_0)");
    STRATA_ASSIGN_OR_RETURN(p.kv_type, kv_type_from_name(top["kv_type"].get<std::string>()));
  }
  if (top.contains("swa_full")) {
    if (!top["swa_full"].is_boolean()) return bad("placement: 'swa_full' must be true or false, not " + type_name(top["swa_full"]));
    p.swa_full = top["swa_full"].get<bool>();
  }
  STRATA_ASSIGN_OR_RETURN(p.embedding, parse_single_part(top, "embedding"));
  STRATA_ASSIGN_OR_RETURN(p.head, parse_single_part(top, "head"));

  if (!top.contains("layers")) return bad("placement: missing 'layers'");
  const json& layers = top["layers"];
  if (!layers.is_array()) return bad("placement: 'layers' must be an array, not " + type_name(layers));

  std::vector<LayerPlacement> placed(static_cast<size_t>(n_layers));
  std::vector<int> owner(static_cast<size_t>(n_layers), -1);          // entry index per layer
  std::vector<std::pair<int64_t, int64_t>> ranges;                     // per entry, inclusive
  for (size_t e = 0; e < layers.size(); ++e) {
    const std::string where = "layers[" + std::to_string(e) + "]";
    const json& entry = layers[e];
    if (!entry.is_object()) return bad(where + " must be an object, not " + type_name(entry));
    STRATA_RETURN_IF_ERROR(
        check_keys(entry, where, {"layers", "device", "group", "ratio", "kv_device", "ffn_device", "experts"}));
    if (!entry.contains("layers")) return bad(where + ": missing 'layers'");
    STRATA_ASSIGN_OR_RETURN(auto range, parse_range(entry["layers"], where));
    const std::string what = range_text(range.first, range.second);
    if (range.second >= n_layers)
      return bad(where + ": " + what + " out of range: the model has " + std::to_string(n_layers) +
                 " layers (0-" + std::to_string(n_layers - 1) + ")");
    LayerPlacement lp;
    STRATA_ASSIGN_OR_RETURN(lp.target, parse_target(entry, where + " (" + what + ")"));
    if (entry.contains("kv_device")) {
      STRATA_ASSIGN_OR_RETURN(lp.kv_device, device_id(entry["kv_device"], where + ": 'kv_device'"));
    }
    if (entry.contains("ffn_device")) {
      STRATA_ASSIGN_OR_RETURN(lp.ffn_device, device_id(entry["ffn_device"], where + ": 'ffn_device'"));
    }
    if (entry.contains("experts")) {
      STRATA_ASSIGN_OR_RETURN(lp.experts, parse_experts(entry["experts"], where + ": 'experts'"));
    }
    for (int64_t l = range.first; l <= range.second; ++l) {
      if (owner[l] >= 0) {
        const auto& other = ranges[static_cast<size_t>(owner[l])];
        return bad(where + ": " + what + (range.first == range.second ? " overlaps " : " overlap ") + range_text(other.first, other.second) + " at layer " +
                   std::to_string(l));
      }
      owner[l] = static_cast<int>(e);
      placed[l] = lp;
    }
    ranges.push_back(range);
  }
  for (int64_t l = 0; l < n_layers; ++l) {
    if (owner[l] >= 0) continue;
    int64_t end = l;
    while (end + 1 < n_layers && owner[end + 1] < 0) ++end;
    if (end == l) return bad("layer " + std::to_string(l) + " of " + std::to_string(n_layers) + " has no placement");
    return bad("layers " + std::to_string(l) + "-" + std::to_string(end) + " of " + std::to_string(n_layers) +
               " have no placement");
  }
  p.layers = std::move(placed);
  return p;
}

Expected<Placement> load_placement_file(const std::string& path, int64_t n_layers) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{Code::Io, "cannot open placement file '" + path + "': " + std::strerror(errno)};
  std::ostringstream buf;
  buf << in.rdbuf();
  json j;
  try {
    j = json::parse(buf.str());
  } catch (const json::parse_error& e) {
    return bad("placement file '" + path + "' is not valid JSON: " + e.what());
  }
  auto p = placement_from_json(j, n_layers);
  if (!p.ok()) return Error{p.error().code, "placement file '" + path + "': " + p.error().message};
  return p;
}

Status save_placement_file(const Placement& placement, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Error{Code::Io, "cannot write placement file '" + path + "': " + std::strerror(errno)};
  out << to_json(placement).dump(2) << "\n";
  out.flush();
  if (!out) return Error{Code::Io, "writing placement file '" + path + "' failed: " + std::strerror(errno)};
  return {};
}

}  // namespace strata::plan
