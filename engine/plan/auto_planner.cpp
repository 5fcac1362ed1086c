// engine/plan/auto_planner.cpp — memory-first, then time-balanced placement of contiguous layer
// ranges over devices in preference order (a DP over layer x device), with explanations.
// Sizes come from memory_estimate's rules and times from cost_model; nothing is loaded.
#include "engine/plan/auto_planner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

#include "engine/plan/placement_validate.h"

namespace strata::plan {

const char* plan_goal_name(PlanGoal goal) {
  switch (goal) {
    case PlanGoal::FitMemory: return "fit";
    case PlanGoal::BalanceSpeed: return "balance";
    case PlanGoal::FewestTransfers: return "fewest-transfers";
  }
  return "?";
}

Expected<PlanGoal> parse_plan_goal(const std::string& text) {
  for (PlanGoal g : {PlanGoal::FitMemory, PlanGoal::BalanceSpeed, PlanGoal::FewestTransfers})
    if (text == plan_goal_name(g)) return g;
  return Error{Code::InvalidArgument, "plan goal '" + text + "' is not one of: fit, balance, fewest-transfers"};
}

int64_t default_n_ctx(const model::ModelConfig& config) {
  return config.n_ctx_train > 0 ? std::min<int64_t>(config.n_ctx_train, 4096) : 4096;
}

std::vector<DeviceInfo> preference_order(const std::vector<DeviceInfo>& devices) {
  std::vector<DeviceInfo> out;
  for (const auto& d : devices)
    if (!d.caps.host_cpu) out.push_back(d);
  for (const auto& d : devices)
    if (d.caps.host_cpu) out.push_back(d);
  return out;
}

namespace {

// Everything one planning pass needs, precomputed for one context length.
struct Problem {
  const model::ModelConfig* c = nullptr;
  const model::ModelWeights* w = nullptr;
  std::vector<DeviceInfo> order;
  int cpu = -1;  // index in order of the first CPU device, or -1
  int64_t n = 0, n_ctx = 0, n_seq = 1, max_batch = 1;
  kernels::DType kv_type = kernels::DType::F16;
  bool swa_full = false;
  double margin = 0.05;
  std::vector<uint64_t> budget;                 // usable bytes per device
  // Per device: weights + KV of layers [0, i) (a device other than the CPU holds no routed
  // experts of the first experts_on_cpu layers: they are on the CPU).
  std::vector<std::vector<uint64_t>> prefix_bytes;
  int64_t experts_on_cpu = 0;   // MoE: the first N blocks' routed experts run on the CPU device
  uint64_t cpu_reserved = 0;    // bytes those experts (and the CPU's runtime) take there
  bool no_blocks_on_cpu = false;  // experts-first plans keep every block's attention off the CPU
  std::vector<std::vector<double>> prefix_ms;   // per device: decode ms of layers [0, i)
  std::vector<uint64_t> scratch, scratch_head;  // per device, running blocks (without / with head)
  std::vector<uint64_t> scratch_emb_only;       // per device, embedding only
  std::vector<double> emb_ms, head_ms;
  uint64_t emb_bytes = 0, rope_bytes = 0;
};

Problem make_problem(const model::ModelConfig& c, const model::ModelWeights& w,
                     const std::vector<DeviceInfo>& devices, int64_t n_ctx, const AutoPlanOptions& o,
                     int64_t experts_on_cpu = 0) {
  Problem p;
  p.c = &c;
  p.w = &w;
  p.order = preference_order(devices);
  p.n = c.n_layers;
  p.n_ctx = n_ctx;
  p.n_seq = o.n_seq;
  p.kv_type = o.kv_type;
  p.swa_full = o.swa_full;
  p.max_batch = o.max_batch;
  p.margin = o.margin_fraction;
  p.experts_on_cpu = experts_on_cpu;
  p.no_blocks_on_cpu = experts_on_cpu > 0;
  const LayerShard whole = whole_layer(c);
  p.emb_bytes = w.token_embd.n_bytes;
  p.rope_bytes = w.rope_freqs.n_bytes;
  for (size_t k = 0; k < p.order.size(); ++k)
    if (p.order[k].caps.host_cpu && p.cpu < 0) p.cpu = static_cast<int>(k);
  for (size_t k = 0; k < p.order.size(); ++k) {
    const DeviceInfo& d = p.order[k];
    const bool experts_away = experts_on_cpu > 0 && static_cast<int>(k) != p.cpu && p.cpu >= 0;
    std::vector<uint64_t> bytes(static_cast<size_t>(p.n) + 1, 0);
    std::vector<double> ms(static_cast<size_t>(p.n) + 1, 0.0);
    for (int64_t i = 0; i < p.n; ++i) {
      const model::LayerWeights& l = w.layers[static_cast<size_t>(i)];
      uint64_t b = l.n_bytes() + shard_kv_bytes(c, whole, kv_cells(c, i, n_ctx, o.max_batch, o.swa_full), o.n_seq, o.kv_type);
      double t = block_ms(c, l, whole, true, d, 1);
      if (experts_away && i < experts_on_cpu) {
        // The block's attention and router here, its routed experts on the CPU, and the hidden
        // state (with the routing and partial sum) there and back.
        const DeviceInfo& cpu = p.order[static_cast<size_t>(p.cpu)];
        const uint64_t experts = expert_range_bytes(c, l, 0, c.n_expert);
        b -= experts;
        t = block_ms(c, l, whole, true, d, 1) - experts_ms(c, l, 0, c.n_expert, d, 1) +
            experts_ms(c, l, 0, c.n_expert, cpu, 1) +
            2.0 * transfer_ms(2 * hidden_state_bytes(c), d, cpu);
      }
      bytes[static_cast<size_t>(i) + 1] = bytes[static_cast<size_t>(i)] + b;
      ms[static_cast<size_t>(i) + 1] = ms[static_cast<size_t>(i)] + t;
    }
    p.prefix_bytes.push_back(std::move(bytes));
    p.budget.push_back(static_cast<uint64_t>(static_cast<double>(d.bytes_total) * (1.0 - o.margin_fraction)));
    p.prefix_ms.push_back(std::move(ms));
    p.scratch.push_back(device_scratch_bytes(c, whole, true, false, o.max_batch, n_ctx, o.n_seq, d.threads));
    p.scratch_head.push_back(device_scratch_bytes(c, whole, true, true, o.max_batch, n_ctx, o.n_seq, d.threads));
    p.scratch_emb_only.push_back(device_scratch_bytes(c, whole, false, false, o.max_batch, n_ctx, o.n_seq, d.threads));
    p.emb_ms.push_back(embedding_ms(c, w, d));
    p.head_ms.push_back(head_ms(c, w, d, 1));
  }
  if (experts_on_cpu > 0 && p.cpu >= 0) {
    // The CPU holds the experts, their activation scratch and its runtime.
    const DeviceInfo& cpu = p.order[static_cast<size_t>(p.cpu)];
    for (int64_t i = 0; i < std::min(experts_on_cpu, p.n); ++i)
      p.cpu_reserved += expert_range_bytes(c, w.layers[static_cast<size_t>(i)], 0, c.n_expert);
    p.cpu_reserved += cpu.runtime_overhead_bytes + p.rope_bytes + p.scratch[static_cast<size_t>(p.cpu)];
  }
  return p;
}

// Bytes device k needs to run blocks [i, j). emb_on_cpu: the embedding sits on the CPU device
// (its bytes are reserved there separately).
uint64_t segment_bytes(const Problem& p, int k, int64_t i, int64_t j, bool emb_on_cpu) {
  const bool emb_here = i == 0 && !emb_on_cpu;
  const bool head_here = j == p.n;
  uint64_t b = p.order[k].runtime_overhead_bytes + p.rope_bytes + (p.prefix_bytes[k][j] - p.prefix_bytes[k][i]);
  b += head_here ? p.scratch_head[k] : p.scratch[k];
  if (emb_here) b += p.emb_bytes;
  if (head_here) b += head_weight_bytes(*p.c, *p.w, emb_on_cpu ? k == p.cpu : emb_here);
  return b;
}

uint64_t budget_of(const Problem& p, int k, bool emb_on_cpu) {
  if (k == p.cpu && p.no_blocks_on_cpu) return 0;  // experts-first: no block runs whole on the CPU
  if (emb_on_cpu && k == p.cpu) return p.budget[k] > p.emb_bytes ? p.budget[k] - p.emb_bytes : 0;
  return p.budget[k];
}

double recv_ms(const Problem& p, int from, int to) {
  if (from < 0) return 0.0;
  return transfer_ms(hidden_state_bytes(*p.c), p.order[from], p.order[to]);
}

double segment_ms(const Problem& p, int k, int64_t i, int64_t j, bool emb_on_cpu) {
  double t = p.prefix_ms[k][j] - p.prefix_ms[k][i];
  if (i == 0 && !emb_on_cpu) t += p.emb_ms[k];
  if (j == p.n) t += p.head_ms[k];
  return t;
}

// A candidate: blocks in contiguous segments, in preference order.
struct Candidate {
  std::vector<int> device;      // index into Problem::order, per segment
  std::vector<int64_t> end;     // exclusive end layer, per segment
  bool emb_on_cpu = false;
  double sum_ms = 0, worst_ms = 0;
  int stages = 0;               // pipeline stages, the CPU embedding stage included
};

double objective(const Problem& p, double sum, double worst) {
  return std::max(sum, static_cast<double>(p.n_seq) * worst) / static_cast<double>(p.n_seq);
}

// Is an embedding-on-CPU plan whose CPU runs no blocks within the CPU's budget?
bool cpu_embedding_fits(const Problem& p, const Candidate& cand) {
  if (!cand.emb_on_cpu) return true;
  if (std::find(cand.device.begin(), cand.device.end(), p.cpu) != cand.device.end()) return true;  // sized in DP
  // The experts' reservation already counts the CPU's runtime and a blocks-sized scratch.
  const uint64_t need = p.cpu_reserved > 0 ? p.cpu_reserved + p.emb_bytes
                                           : p.order[p.cpu].runtime_overhead_bytes + p.scratch_emb_only[p.cpu] + p.emb_bytes;
  return need <= p.budget[p.cpu];
}

// Every Pareto-best (sum, worst) plan per (last device, stage count): a DP over layers x devices.
std::vector<Candidate> dp_candidates(const Problem& p, bool emb_on_cpu) {
  std::vector<Candidate> out;
  if (emb_on_cpu && p.cpu < 0) return out;
  const int D = static_cast<int>(p.order.size());
  const int S = D + 2;
  struct Entry {
    double sum, worst;
    int prev_state, prev_entry;
  };
  auto state_of = [&](int64_t i, int k, int s) { return static_cast<int>((i * (D + 1) + (k + 1)) * S + s); };
  std::vector<std::vector<Entry>> front(static_cast<size_t>((p.n + 1) * (D + 1) * S));
  auto insert = [&](int state, Entry e) {
    auto& f = front[state];
    for (const Entry& x : f)
      if (x.sum <= e.sum && (p.n_seq == 1 || x.worst <= e.worst)) return;
    std::erase_if(f, [&](const Entry& x) { return e.sum <= x.sum && (p.n_seq == 1 || e.worst <= x.worst); });
    f.push_back(e);
    if (f.size() > 48) {  // bound the front: drop the entry with the worst objective
      auto it = std::max_element(f.begin(), f.end(), [&](const Entry& a, const Entry& b) {
        return objective(p, a.sum, a.worst) < objective(p, b.sum, b.worst);
      });
      f.erase(it);
    }
  };
  const int s0 = emb_on_cpu ? 1 : 0;
  const double t0 = emb_on_cpu ? p.emb_ms[p.cpu] : 0.0;
  insert(state_of(0, -1, s0), Entry{t0, t0, -1, -1});
  for (int64_t i = 0; i < p.n; ++i) {
    for (int k = -1; k < D; ++k) {
      for (int s = 0; s + 1 < S; ++s) {
        const int from = state_of(i, k, s);
        for (int e = 0; e < static_cast<int>(front[from].size()); ++e) {
          const Entry cur = front[from][e];
          for (int k2 = k + 1; k2 < D; ++k2) {
            if (i == 0 && emb_on_cpu && k2 == p.cpu) continue;  // that is the plain plan
            const int prev_dev = i == 0 ? (emb_on_cpu ? p.cpu : -1) : k;
            const double recv = recv_ms(p, prev_dev, k2);
            const uint64_t budget = budget_of(p, k2, emb_on_cpu);
            for (int64_t j = i + 1; j <= p.n; ++j) {
              if (segment_bytes(p, k2, i, j, emb_on_cpu) > budget) {
                if (j < p.n) break;  // more layers only need more; the head only adds at j == n
                continue;
              }
              const double t = recv + segment_ms(p, k2, i, j, emb_on_cpu);
              insert(state_of(j, k2, s + 1), Entry{cur.sum + t, std::max(cur.worst, t), from, e});
            }
          }
        }
      }
    }
  }
  for (int k = 0; k < D; ++k) {
    for (int s = 1; s < S; ++s) {
      const int st = state_of(p.n, k, s);
      for (int e = 0; e < static_cast<int>(front[st].size()); ++e) {
        Candidate cand;
        cand.emb_on_cpu = emb_on_cpu;
        cand.sum_ms = front[st][e].sum;
        cand.worst_ms = front[st][e].worst;
        cand.stages = s;
        int state = st, entry = e;
        while (front[state][entry].prev_state >= 0) {
          const int rest = state / S;
          cand.device.push_back(rest % (D + 1) - 1);
          cand.end.push_back(rest / (D + 1));
          const Entry& x = front[state][entry];
          state = x.prev_state;
          entry = x.prev_entry;
        }
        std::reverse(cand.device.begin(), cand.device.end());
        std::reverse(cand.end.begin(), cand.end.end());
        if (cpu_embedding_fits(p, cand)) out.push_back(std::move(cand));
      }
    }
  }
  return out;
}

// Fill each device in preference order as far as it goes.
std::vector<Candidate> greedy_candidates(const Problem& p) {
  std::vector<Candidate> out;
  for (bool emb_on_cpu : {false, true}) {
    if (emb_on_cpu && p.cpu < 0) continue;
    Candidate cand;
    cand.emb_on_cpu = emb_on_cpu;
    int64_t i = 0;
    int prev = emb_on_cpu ? p.cpu : -1;
    if (emb_on_cpu) {
      cand.sum_ms = cand.worst_ms = p.emb_ms[p.cpu];
      cand.stages = 1;
    }
    for (int k = 0; k < static_cast<int>(p.order.size()) && i < p.n; ++k) {
      if (i == 0 && emb_on_cpu && k == p.cpu) continue;
      int64_t best = i;
      for (int64_t j = i + 1; j <= p.n; ++j) {
        if (segment_bytes(p, k, i, j, emb_on_cpu) <= budget_of(p, k, emb_on_cpu)) best = j;
        else if (j < p.n) break;
      }
      if (best == i) continue;
      const double t = recv_ms(p, prev, k) + segment_ms(p, k, i, best, emb_on_cpu);
      cand.sum_ms += t;
      cand.worst_ms = std::max(cand.worst_ms, t);
      cand.stages += 1;
      cand.device.push_back(k);
      cand.end.push_back(best);
      prev = k;
      i = best;
    }
    if (i == p.n && cpu_embedding_fits(p, cand)) out.push_back(std::move(cand));
  }
  return out;
}

// Candidates in the order the goal prefers them.
std::vector<Candidate> ranked(const Problem& p, PlanGoal goal) {
  std::vector<Candidate> all;
  if (goal == PlanGoal::FitMemory) all = greedy_candidates(p);
  const size_t n_greedy = all.size();  // kept first, in their order
  for (bool emb_on_cpu : {false, true}) {
    std::vector<Candidate> more = dp_candidates(p, emb_on_cpu);
    all.insert(all.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }
  if (all.empty()) return all;
  double best = std::numeric_limits<double>::infinity();
  for (const auto& c : all) best = std::min(best, objective(p, c.sum_ms, c.worst_ms));
  auto key = [&](const Candidate& c) {
    const double obj = objective(p, c.sum_ms, c.worst_ms);
    const bool near = obj <= best * (1.0 + kTimeTolerance) + 1e-12;
    switch (goal) {
      case PlanGoal::FewestTransfers: return std::make_tuple(0, c.stages, obj);
      case PlanGoal::BalanceSpeed: return std::make_tuple(near ? 0 : 1, near ? c.stages : 0, obj);
      case PlanGoal::FitMemory: break;
    }
    return std::make_tuple(1, c.stages, obj);  // after the greedy plans: fewest stages
  };
  std::stable_sort(all.begin() + static_cast<std::ptrdiff_t>(n_greedy), all.end(),
                   [&](const Candidate& a, const Candidate& b) { return key(a) < key(b); });
  return all;
}

Placement to_placement(const Problem& p, const Candidate& cand) {
  Placement pl;
  pl.n_ctx = p.n_ctx;
  pl.n_seq = p.n_seq;
  pl.kv_type = p.kv_type;
  pl.swa_full = p.swa_full;
  pl.max_batch = p.max_batch;
  pl.layers.resize(static_cast<size_t>(p.n));
  int64_t i = 0;
  for (size_t s = 0; s < cand.device.size(); ++s) {
    for (; i < cand.end[s]; ++i) pl.layers[i].target.devices = {p.order[cand.device[s]].id};
  }
  // Experts-first plans: the first experts_on_cpu blocks' routed experts on the CPU.
  for (int64_t l = 0; l < std::min(p.experts_on_cpu, p.n); ++l) {
    if (p.cpu >= 0 && pl.layers[static_cast<size_t>(l)].target.devices[0] != p.order[p.cpu].id)
      pl.layers[static_cast<size_t>(l)].experts = {ExpertRange{0, kAllExperts, p.order[p.cpu].id}};
  }
  pl.embedding.devices = {cand.emb_on_cpu ? p.order[p.cpu].id : p.order[cand.device.front()].id};
  pl.head.devices = {p.order[cand.device.back()].id};
  return pl;
}

std::string ms_text(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, ms < 0.01 ? "%.4f" : "%.2f", ms);
  return buf;
}

std::string layer_ranges(const Placement& pl, const std::string& id) {
  std::string out;
  for (const Stage& s : stages_of(pl)) {
    if (std::find(s.target.devices.begin(), s.target.devices.end(), id) == s.target.devices.end()) continue;
    out += out.empty() ? "" : ", ";
    out += s.end_layer - s.first_layer == 1 ? "layer " + std::to_string(s.first_layer)
                                            : "layers " + std::to_string(s.first_layer) + "-" +
                                                  std::to_string(s.end_layer - 1);
  }
  return out;
}

std::vector<std::string> explain(const Problem& p, const PlanResult& r, PlanGoal goal,
                                 const std::vector<DeviceInfo>& devices) {
  std::vector<std::string> lines;
  const std::vector<Stage> stages = stages_of(r.placement);
  const uint64_t smallest_layer = p.n > 0 ? [&] {
    uint64_t m = std::numeric_limits<uint64_t>::max();
    for (int64_t i = 0; i < p.n; ++i) m = std::min(m, p.prefix_bytes[0][i + 1] - p.prefix_bytes[0][i]);
    return m;
  }()
                                          : 0;
  // The device that would run the whole model fastest on its own (ignoring memory).
  int fastest = 0;
  for (int k = 1; k < static_cast<int>(p.order.size()); ++k)
    if (segment_ms(p, k, 0, p.n, false) < segment_ms(p, fastest, 0, p.n, false)) fastest = k;
  for (const DeviceInfo& d : devices) {
    const DeviceMemory* m = r.memory.find(d.id);
    double ms = 0;
    for (const auto& dc : r.cost.devices)
      if (dc.device == d.id) ms = dc.decode_ms;
    if (!m) {
      lines.push_back(d.id + ": unused: " + (stages.size() == 1 ? stages[0].target.devices[0] + " holds every layer"
                                                                : std::string("adding it would not speed up a token")));
      continue;
    }
    std::string what = layer_ranges(r.placement, d.id);
    if (m->has_embedding) what += what.empty() ? "embedding" : " + embedding";
    if (m->has_head) what += what.empty() ? "head" : " + head";
    std::string why;
    const uint64_t usable = static_cast<uint64_t>(static_cast<double>(d.bytes_total) * (1.0 - p.margin));
    if (m->n_blocks == 0 && m->has_embedding) {
      why = "the first block's device had no room for the embedding";
    } else if (stages.size() == 1) {
      why = p.order[fastest].id == d.id ? "fastest device: all layers fit"
                                        : std::string(goal == PlanGoal::FitMemory ? "first in preference order"
                                                                                  : "one stage, no transfers") +
                                              ": all layers fit";
    } else if (m->total_bytes + smallest_layer > usable) {
      why = "full at " + format_bytes(m->total_bytes) + " of " + format_bytes(d.bytes_total) + " (" +
            std::to_string(static_cast<int>(std::lround(p.margin * 100))) + "% kept free)";
    } else if (goal == PlanGoal::FitMemory) {
      why = "holds the layers left over";
    } else {
      why = "share balanced by predicted time (slowest stage " + ms_text(r.cost.bottleneck_ms) + " ms)";
    }
    lines.push_back(d.id + ": " + what + ", " + format_bytes(m->total_bytes) + " of " + format_bytes(d.bytes_total) +
                    ", " + ms_text(ms) + " ms per token: " + why);
  }
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "plan (%s): %zu stage%s, predicted %s ms per token, %.1f tokens/s at %lld sequence%s, prefill "
                "%.0f tokens/s; ctx %lld, %.0f%% of each device kept free",
                plan_goal_name(goal), r.cost.stages.size(), r.cost.stages.size() == 1 ? "" : "s",
                ms_text(r.cost.decode_ms_per_token).c_str(), r.cost.decode_tokens_per_s,
                static_cast<long long>(p.n_seq), p.n_seq == 1 ? "" : "s", r.cost.prefill_tokens_per_s,
                static_cast<long long>(p.n_ctx), p.margin * 100);
  lines.push_back(buf);
  return lines;
}

// A plan that ignores capacity (layers in proportion to usable bytes), to say what is missing.
std::string shortfall_text(const Problem& p, const model::ModelConfig& c, const model::ModelWeights& w,
                           const std::vector<DeviceInfo>& devices, uint64_t* need, uint64_t* hold) {
  Candidate cand;
  double total_budget = 0;
  for (uint64_t b : p.budget) total_budget += static_cast<double>(b);
  double acc = 0;
  int64_t i = 0;
  for (int k = 0; k < static_cast<int>(p.order.size()); ++k) {
    acc += static_cast<double>(p.budget[k]);
    int64_t end = k + 1 == static_cast<int>(p.order.size())
                      ? p.n
                      : static_cast<int64_t>(std::llround(static_cast<double>(p.n) * acc / std::max(total_budget, 1.0)));
    end = std::clamp<int64_t>(end, i, p.n);
    if (end == i) continue;
    cand.device.push_back(k);
    cand.end.push_back(end);
    i = end;
  }
  *hold = static_cast<uint64_t>(total_budget);
  *need = 0;
  if (cand.device.empty()) return "";
  Placement placed = to_placement(p, cand);
  attention_on_capable_devices(placed, c, devices);
  auto est = estimate_memory(placed, c, w, devices);
  if (!est.ok()) return "";
  *need = est->total_bytes();
  std::string out;
  for (const DeviceMemory& d : est->devices) {
    int k = 0;
    while (p.order[k].id != d.device) ++k;
    if (d.total_bytes > p.budget[k])
      out += (out.empty() ? "" : ", ") + d.device + " short " + format_bytes(d.total_bytes - p.budget[k]);
  }
  return out;
}

Status check_options(const model::ModelConfig& c, const std::vector<DeviceInfo>& devices,
                     const AutoPlanOptions& o, int64_t n_ctx) {
  if (devices.empty()) return Error{Code::InvalidArgument, "auto placement: no devices"};
  if (c.n_layers < 1) return Error{Code::InvalidArgument, "auto placement: the model has no layers"};
  if (n_ctx < 1 || n_ctx > kMaxCtx)
    return Error{Code::OutOfRange, "auto placement: n_ctx " + std::to_string(n_ctx) + " is outside 1.." +
                                       std::to_string(kMaxCtx)};
  if (o.n_seq < 1 || o.n_seq > kMaxSeq)
    return Error{Code::OutOfRange, "auto placement: n_seq " + std::to_string(o.n_seq) + " is outside 1.." +
                                       std::to_string(kMaxSeq)};
  if (o.max_batch < 1 || o.max_batch > kMaxBatch)
    return Error{Code::OutOfRange, "auto placement: max_batch " + std::to_string(o.max_batch) + " is outside 1.." +
                                       std::to_string(kMaxBatch)};
  if (!(o.margin_fraction >= 0.0 && o.margin_fraction < 1.0))
    return Error{Code::InvalidArgument, "auto placement: margin " + std::to_string(o.margin_fraction) +
                                            " must be in [0, 1)"};
  return {};
}

}  // namespace

Expected<PlanResult> auto_plan(const model::ModelConfig& c, const model::ModelWeights& w,
                               const std::vector<DeviceInfo>& devices, const AutoPlanOptions& o) {
  const int64_t n_ctx = o.n_ctx != 0 ? o.n_ctx : default_n_ctx(c);
  STRATA_RETURN_IF_ERROR(check_options(c, devices, o, n_ctx));
  if (static_cast<int64_t>(w.layers.size()) != c.n_layers)
    return Error{Code::Internal, "auto placement: weights have " + std::to_string(w.layers.size()) +
                                     " layers, the config " + std::to_string(c.n_layers)};
  auto first_fitting = [&](const Problem& p) -> Expected<std::optional<PlanResult>> {
    for (const Candidate& cand : ranked(p, o.goal)) {
      PlanResult r;
      r.placement = to_placement(p, cand);
      const std::string moved = attention_on_capable_devices(r.placement, c, devices);
      STRATA_ASSIGN_OR_RETURN(r.memory, estimate_memory(r.placement, c, w, devices));
      if (!check_fits(r.memory, o.margin_fraction).ok()) continue;  // the DP's sizes disagree: next plan
      STRATA_ASSIGN_OR_RETURN(r.cost, estimate_cost(r.placement, c, w, devices));
      STRATA_ASSIGN_OR_RETURN(r.cost_full_context, estimate_cost(r.placement, c, w, devices, r.placement.n_ctx));
      r.explanation = explain(p, r, o.goal, devices);
      if (!moved.empty()) r.explanation.push_back(moved);
      return std::optional<PlanResult>(std::move(r));
    }
    return std::optional<PlanResult>();
  };
  const Problem p = make_problem(c, w, devices, n_ctx, o);
  STRATA_ASSIGN_OR_RETURN(std::optional<PlanResult> plain, first_fitting(p));
  // A mixture-of-experts model that does not fit the accelerators whole: move routed experts to
  // the CPU, block by block from the first (llama.cpp's --n-cpu-moe), before whole blocks.
  const auto blocks_on_cpu = [&](const Placement& pl) {
    int64_t n = 0;
    for (const LayerPlacement& l : pl.layers) n += p.cpu >= 0 && l.target.devices[0] == p.order[p.cpu].id ? 1 : 0;
    return n;
  };
  const bool accelerators = std::any_of(p.order.begin(), p.order.end(), [](const DeviceInfo& d) { return !d.caps.host_cpu; });
  const int64_t plain_on_cpu = plain ? blocks_on_cpu(plain->placement) : -1;
  if (c.is_moe() && p.cpu >= 0 && accelerators && (!plain || plain_on_cpu > 0)) {
    for (int64_t n_experts = 1; n_experts <= c.n_layers; ++n_experts) {
      const Problem q = make_problem(c, w, devices, n_ctx, o, n_experts);
      STRATA_ASSIGN_OR_RETURN(std::optional<PlanResult> moved, first_fitting(q));
      if (!moved) continue;
      uint64_t expert_bytes = 0;
      for (int64_t l = 0; l < n_experts; ++l) expert_bytes += expert_range_bytes(c, w.layers[static_cast<size_t>(l)], 0, c.n_expert);
      moved->explanation.insert(
          moved->explanation.begin(),
          "experts first: the routed experts of " +
              (n_experts == 1 ? std::string("block 0") : "blocks 0-" + std::to_string(n_experts - 1)) + " (" +
              format_bytes(expert_bytes) + ") run on " + p.order[p.cpu].id +
              " so that every block's attention, KV cache and router stay on the accelerators; " +
              (plain ? "otherwise " + std::to_string(plain_on_cpu) + " whole block" + (plain_on_cpu == 1 ? "" : "s") +
                           " would run on " + p.order[p.cpu].id
                     : std::string("whole blocks alone do not fit")));
      return std::move(*moved);
    }
  }
  if (plain) return std::move(*plain);

  // Nothing fits: what is missing, and the largest context that would fit.
  uint64_t need = 0, hold = 0;
  const std::string shorts = shortfall_text(p, c, w, devices, &need, &hold);
  auto fits_at = [&](int64_t ctx) {
    const Problem q = make_problem(c, w, devices, ctx, o);
    return !ranked(q, PlanGoal::FewestTransfers).empty();
  };
  int64_t lo = 0, hi = n_ctx - 1;  // lo: largest known to fit (0: none)
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (fits_at(mid)) lo = mid;
    else hi = mid - 1;
  }
  char margin[32];
  std::snprintf(margin, sizeof margin, "%.0f%%", o.margin_fraction * 100);
  std::string msg = "model needs " + format_bytes(need) + " at ctx " + std::to_string(n_ctx) + " x " +
                    std::to_string(o.n_seq) + " seq but devices hold " + format_bytes(hold) + " with " + margin +
                    " of each kept free";
  msg += shorts.empty() ? "; its layers cannot be divided to fit" : " (" + shorts + ")";
  msg += lo > 0 ? "; the largest context that fits is " + std::to_string(lo)
                : "; no context fits: the weights alone do not fit";
  return Error{Code::OutOfMemory, msg};
}

}  // namespace strata::plan
