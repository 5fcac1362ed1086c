// app/engine_cli/cmd_bench.cpp — `strata-engine bench`: prompt processing and generation speed
// in the manner of llama-bench (-p, -n, -d, -r, -t; comma lists), plus the memory-bandwidth
// roofline of decode. The read bandwidth is measured right after every repetition (a shared
// machine's bandwidth moves within seconds), and the report names the CPU and the kernel each
// weight type took.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/engine_cli/commands.h"
#include "app/engine_cli/common.h"
#include "app/engine_cli/placement_cli.h"
#include "engine/exec/session.h"
#include "kernels/cpu/bandwidth.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/matmul.h"

namespace strata::cli {

namespace {
struct BenchOptions {
  ModelOptions model;
  DeviceOptions devices;
  int parallel = 1;
  std::vector<int> n_prompt{64};
  std::vector<int> n_gen{32};
  std::vector<int> depth{0};  // tokens in the KV cache before each test (filled untimed)
  int reps = 3;
  bool json = false;
  bool no_bandwidth = false;
  bool no_one_in_flight = false;  // --parallel: skip the one-sequence-at-a-time comparison
  std::string isa;  // "": the best the CPU has; else scalar / avx2 / avx512 / amx (at most the CPU's)
};

struct Series {
  std::string name;
  int n_tokens = 0;
  int depth = 0;
  std::vector<double> tps = {};
  std::vector<double> gbps = {};  // read bandwidth measured right after each repetition (empty: not measured)
  static double average(const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? 0 : s / static_cast<double>(v.size());
  }
  double mean() const {
    double s = 0;
    for (double v : tps) s += v;
    return tps.empty() ? 0 : s / static_cast<double>(tps.size());
  }
  double stddev() const {
    if (tps.size() < 2) return 0;
    const double m = mean();
    double s = 0;
    for (double v : tps) s += (v - m) * (v - m);
    return std::sqrt(s / static_cast<double>(tps.size() - 1));
  }
};

// The weight type holding most bytes, as llama-bench names a file ("q4_K - Medium" is a mix).
std::string dominant_types(const model::Model& m) {
  std::map<std::string, uint64_t> bytes;
  for (const auto& t : m.file().tensors()) bytes[kernels::dtype_name(t.type)] += t.n_bytes;
  std::vector<std::pair<uint64_t, std::string>> v;
  for (auto& [k, b] : bytes) v.emplace_back(b, k);
  std::sort(v.rbegin(), v.rend());
  std::string s;
  for (size_t i = 0; i < v.size() && i < 2; ++i) s += (i ? "+" : "") + v[i].second;
  return s;
}

int bench(const BenchOptions& o) {
  if (!o.isa.empty()) {
    // Every CPU op after this takes the paths of that ISA: what a CPU without the wider one runs.
    // amx: the Avx512 level with its AMX tiles for prompt batches; avx512: without them
    if (!kernels::force_isa_by_name(o.isa.c_str()))
      return report(Error{Code::InvalidArgument,
                          "--isa " + o.isa + ": this CPU (" + kernels::cpu_description() + ") does not have it"});
  }
  auto loaded = load_model(o.model, /*remember=*/false);
  if (!loaded.ok()) return report(loaded.error());
  const model::Model& m = **loaded;
  const int threads = resolve_threads(o.model.threads);
  const int k = o.parallel;
  const int max_p = *std::max_element(o.n_prompt.begin(), o.n_prompt.end());
  const int max_n = *std::max_element(o.n_gen.begin(), o.n_gen.end());
  const int max_d = *std::max_element(o.depth.begin(), o.depth.end());
  ModelOptions mo = o.model;
  const int64_t need_ctx = static_cast<int64_t>(max_d) + std::max(max_p, max_n + 1);
  if (mo.ctx == 0) mo.ctx = need_ctx;
  if (need_ctx > mo.ctx)
    return report(Error{Code::InvalidArgument, "-d " + std::to_string(max_d) + " plus -p " + std::to_string(max_p) +
                                                   " / -n " + std::to_string(max_n) + " do not fit in --ctx " +
                                                   std::to_string(mo.ctx)});
  DeviceOptions dopt = o.devices;
  // Unless --batch says otherwise: the largest prompt test in one pass, and the depth filled in
  // passes of up to 512 tokens (llama-bench's default micro-batch) even when no prompt is tested.
  // Scratch rows also hold a decode step of all k sequences in one pass.
  if (dopt.max_batch == 256) dopt.max_batch = std::max({max_p, std::min(max_d, 512), k, 1});
  auto runtime = build_runtime(m, mo, dopt, k);
  if (!runtime.ok()) return report(runtime.error());
  Runtime& rt = *runtime;
  exec::Pipeline& pipe = *rt.pipeline;
  std::vector<std::vector<float>> logits(static_cast<size_t>(k), std::vector<float>(static_cast<size_t>(m.config().n_vocab)));

  kernels::ThreadPool bw_pool(threads);  // the bandwidth probe's threads, as many as the model's
  int fastest[kernels::kReadBandwidthReaders] = {};  // how often each of the probe's readers was fastest
  auto probe = [&](Series& series) {
    if (o.no_bandwidth) return;
    int reader = -1;
    series.gbps.push_back(kernels::measure_read_bandwidth_gbps(bw_pool, int64_t{256} << 20, &reader));
    if (reader >= 0) ++fastest[reader];
  };
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(m.config().n_vocab - 1));
  using clock = std::chrono::steady_clock;
  auto seconds = [](clock::time_point a) { return std::chrono::duration<double>(clock::now() - a).count(); };
  auto random_tokens = [&](int n) {
    std::vector<std::vector<int32_t>> t(static_cast<size_t>(k), std::vector<int32_t>(static_cast<size_t>(n)));
    for (auto& row : t)
      for (auto& x : row) x = token(rng);
    return t;
  };
  // One step: every sequence gets its tokens; pipelined (all in flight) or one after another.
  auto step = [&](const std::vector<std::vector<int32_t>>& tokens, bool pipelined) -> Status {
    std::vector<exec::Pipeline::Request> reqs;
    for (int s = 0; s < k; ++s) reqs.push_back({s, tokens[static_cast<size_t>(s)], logits[static_cast<size_t>(s)].data()});
    if (pipelined) return pipe.eval(reqs);
    for (const auto& r : reqs) STRATA_RETURN_IF_ERROR(pipe.eval(std::span<const exec::Pipeline::Request>(&r, 1)));
    return {};
  };
  // With several stages that can overlap (Pipeline::concurrent_stages) the sequences decode in
  // one group per such stage, each group one micro-batch in flight: when a group leaves the last
  // stage its next step enters the first while the other groups are still in the stages between
  // (Pipeline::submit / wait), so no stage idles at a step boundary and each stage reads its
  // weights once per group and step. Sequence s is in group s % groups. Every sequence makes
  // n_gen steps.
  const int64_t groups = std::min<int64_t>(k, pipe.concurrent_stages());
  auto rolling_generation = [&](int n_gen) -> Status {
    std::vector<std::vector<int32_t>> next(static_cast<size_t>(k), std::vector<int32_t>(1));
    std::vector<std::vector<exec::Pipeline::Request>> group_reqs(static_cast<size_t>(groups));
    for (int s = 0; s < k; ++s)
      group_reqs[static_cast<size_t>(s % groups)].push_back(
          {s, next[static_cast<size_t>(s)], logits[static_cast<size_t>(s)].data()});
    std::deque<std::pair<size_t, uint64_t>> flying;  // (group, eval id), in submit order
    std::vector<int> steps(static_cast<size_t>(groups), 0);
    auto launch = [&](size_t g) -> Status {
      for (const auto& r : group_reqs[g]) next[static_cast<size_t>(r.seq)][0] = token(rng);
      STRATA_ASSIGN_OR_RETURN(uint64_t id, pipe.submit(group_reqs[g], 1));
      flying.emplace_back(g, id);
      ++steps[g];
      return {};
    };
    Status failed;
    for (size_t g = 0; g < static_cast<size_t>(groups) && failed.ok(); ++g) failed = launch(g);
    while (!flying.empty()) {
      const auto [g, id] = flying.front();
      flying.pop_front();
      Status s = pipe.wait(id);
      if (failed.ok() && !s.ok()) failed = std::move(s);
      if (failed.ok() && steps[g] < n_gen) failed = launch(g);
    }
    return failed;
  };
  // Empties every sequence, then fills `depth` random tokens (as one prompt, not timed), like
  // llama-bench's -d.
  auto reset_to_depth = [&](int depth) -> Status {
    for (int s = 0; s < k; ++s) pipe.truncate(s, 0);
    if (depth > 0) return step(random_tokens(depth), true);
    return {};
  };
  const std::string suffix = k > 1 ? " x" + std::to_string(k) : "";
  auto at_depth = [](int d) { return d > 0 ? " @ d" + std::to_string(d) : std::string(); };
  std::vector<Series> results;
  for (int d : o.depth) {
    for (int n_prompt : o.n_prompt) {
      if (n_prompt <= 0) continue;
      Series pp{"pp" + std::to_string(n_prompt) + suffix + at_depth(d), n_prompt, d, {}};
      for (int r = -1; r < o.reps; ++r) {  // r == -1: warm-up, not counted
        if (Status st = reset_to_depth(d); !st.ok()) return report(st.error());
        const auto prompts = random_tokens(n_prompt);
        const auto t0 = clock::now();
        if (Status st = step(prompts, true); !st.ok()) return report(st.error());
        if (r >= 0) {
          pp.tps.push_back(static_cast<double>(k) * n_prompt / seconds(t0));
          probe(pp);
        }
      }
      results.push_back(std::move(pp));
    }
    // Generation: at depth 0 a BOS token first (as before), then n_gen timed single-token steps.
    auto generation = [&](Series& series, int n_gen, bool pipelined) -> Status {
      for (int r = -1; r < o.reps; ++r) {
        STRATA_RETURN_IF_ERROR(reset_to_depth(d));
        if (d == 0) {
          const int32_t bos = m.tokenizer().vocab().bos_id >= 0 ? m.tokenizer().vocab().bos_id : 0;
          STRATA_RETURN_IF_ERROR(step(std::vector<std::vector<int32_t>>(static_cast<size_t>(k), {bos}), true));
        }
        std::vector<std::vector<int32_t>> next(static_cast<size_t>(k), std::vector<int32_t>(1));
        const auto t0 = clock::now();
        if (pipelined && groups > 1) {
          STRATA_RETURN_IF_ERROR(rolling_generation(n_gen));
        } else {
          for (int i = 0; i < n_gen; ++i) {
            for (auto& n : next) n[0] = token(rng);
            STRATA_RETURN_IF_ERROR(step(next, pipelined));
          }
        }
        if (r >= 0) {
          series.tps.push_back(static_cast<double>(k) * n_gen / seconds(t0));
          probe(series);
        }
      }
      return {};
    };
    for (int n_gen : o.n_gen) {
      if (n_gen <= 0) continue;
      Series tg{"tg" + std::to_string(n_gen) + suffix + at_depth(d), n_gen, d, {}};
      if (Status st = generation(tg, n_gen, true); !st.ok()) return report(st.error());
      results.push_back(std::move(tg));
      if (k > 1 && !o.no_one_in_flight) {
        Series serial{"tg" + std::to_string(n_gen) + suffix + " one in flight" + at_depth(d), n_gen, d, {}};
        if (Status st = generation(serial, n_gen, false); !st.ok()) return report(st.error());
        results.push_back(std::move(serial));
      }
    }
  }
  finish_trace(rt, dopt);

  // Bytes a decode step streams from memory: every layer, the final norm and the output head
  // (the embedding contributes one row, which we ignore unless it is the tied head).
  const uint64_t bytes_per_token = m.weight_bytes() - (m.config().tied_output ? 0 : m.weights().token_embd.n_bytes);
  // The roofline compares the first generation test (at the first depth) with weight reads only,
  // at the bandwidth measured right after its repetitions (else after any test's).
  const Series* tg = nullptr;
  for (const Series& series : results)
    if (series.name.rfind("tg", 0) == 0) {
      tg = &series;
      break;
    }
  double bandwidth_gbps = tg ? Series::average(tg->gbps) : 0.0;
  for (const Series& series : results)
    if (bandwidth_gbps <= 0) bandwidth_gbps = Series::average(series.gbps);
  const double roofline_tps = bandwidth_gbps > 0 ? bandwidth_gbps * 1e9 / static_cast<double>(bytes_per_token) : 0;
  const double roofline_fraction = roofline_tps > 0 && tg ? tg->mean() / roofline_tps : 0;
  const bool amx = kernels::active_isa() == kernels::Isa::Avx512 && kernels::amx_active();
  const std::string isa = std::string(kernels::isa_name(kernels::active_isa())) + (amx ? "+amx" : "");
  const std::string cpu = kernels::cpu_description();
  // The kernel each weight type of the model took: decode (1 token per sequence, or one per
  // sequence of a --parallel step) and prompt (the largest -p).
  std::map<std::string, std::pair<std::string, std::string>> paths;
  for (const auto& t : m.file().tensors()) {
    if (t.dims.size() < 2 || t.name == "token_embd.weight") continue;  // matrices the matmul reads
    paths[kernels::dtype_name(t.type)] = {kernels::matmul_path(t.type, k),
                                          max_p > 0 ? kernels::matmul_path(t.type, max_p) : "none (no -p test)"};
  }

  if (o.json) {
    nlohmann::json j;
    j["model"] = m.config().name;
    j["path"] = m.path().string();
    j["types"] = dominant_types(m);
    j["weight_bytes"] = m.weight_bytes();
    j["parameters"] = m.parameter_count();
    j["threads"] = threads;
    j["isa"] = isa;
    j["cpu"] = cpu;
    for (const auto& [type, p] : paths) j["kernels"][type] = {{"decode", p.first}, {"prompt", p.second}};
    j["bandwidth_gbps"] = bandwidth_gbps;
    j["bytes_per_token"] = bytes_per_token;
    j["roofline_tokens_per_s"] = roofline_tps;
    j["roofline_fraction"] = roofline_fraction;
    j["parallel"] = k;
    j["placement"] = plan::to_json(rt.plan.placement);
    for (const Series& series : results)
      j["results"].push_back({{"test", series.name},
                              {"n_tokens", series.n_tokens},
                              {"depth", series.depth},
                              {"reps", series.tps.size()},
                              {"tokens_per_s", series.mean()},
                              {"stddev", series.stddev()},
                              {"samples", series.tps},
                              {"bandwidth_gbps", series.gbps}});
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("| model | types | size | params | threads | isa | test | t/s |\n");
  std::printf("|---|---|---:|---:|---:|---|---:|---:|\n");
  for (const Series& series : results)
    std::printf("| %s | %s | %.2f GiB | %.2f B | %d | %s | %s | %.2f ± %.2f |\n", m.config().name.c_str(),
                dominant_types(m).c_str(), m.weight_bytes() / 1073741824.0, m.parameter_count() / 1e9, threads,
                isa.c_str(), series.name.c_str(), series.mean(), series.stddev());
  std::printf("\ncpu: %s\n", cpu.c_str());
  for (const auto& [type, p] : paths)
    std::printf("kernels %-5s decode: %s; prompt: %s\n", type.c_str(), p.first.c_str(), p.second.c_str());
  for (const Series& series : results) {
    if (series.gbps.empty()) continue;
    std::printf("%s per repetition (t/s @ read GB/s measured right after it):", series.name.c_str());
    for (size_t i = 0; i < series.tps.size() && i < series.gbps.size(); ++i)
      std::printf("%s %.1f @ %.1f", i ? "," : "", series.tps[i], series.gbps[i]);
    std::printf("\n");
  }
  if (bandwidth_gbps > 0) {
    std::string readers;
    for (int r = 0; r < kernels::kReadBandwidthReaders; ++r) {
      if (fastest[r] == 0) continue;
      readers += std::string(readers.empty() ? "" : ", ") + kernels::read_probe_name(r) + " " + std::to_string(fastest[r]) + "x";
    }
    std::printf("memory read bandwidth %.1f GB/s (mean of the repetitions; fastest reader: %s); decode reads %.1f MB of "
                "weights per token -> roofline %.1f tok/s",
                bandwidth_gbps, readers.c_str(), bytes_per_token / 1e6, roofline_tps);
    if (tg)
      std::printf("; %s measured %.1f tok/s = %.0f%% of roofline", tg->name.c_str(), tg->mean(), 100 * roofline_fraction);
    std::printf("\n");
  }
  return 0;
}
}  // namespace

Command add_bench_command(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "measure prompt and generation tokens/s (like llama-bench)");
  add_model_options(*cmd, o->model);
  add_device_options(*cmd, o->devices);
  cmd->add_option("--parallel", o->parallel, "sequences generated at once (pipelined across stages)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("-p,--n-prompt", o->n_prompt, "prompt tokens per test, a comma list (0 = skip)")
      ->delimiter(',')
      ->check(CLI::Range(0, 65536));
  cmd->add_option("-n,--n-gen", o->n_gen, "generated tokens per test, a comma list (0 = skip)")
      ->delimiter(',')
      ->check(CLI::Range(0, 65536));
  cmd->add_option("-d,--depth", o->depth,
                  "tokens already in the KV cache before each test, a comma list (filled untimed, like llama-bench -d)")
      ->delimiter(',')
      ->check(CLI::Range(0, 1 << 24));
  cmd->add_option("-r,--repetitions", o->reps, "repetitions of each test")->check(CLI::Range(1, 1000));
  cmd->add_flag("--json", o->json, "print JSON");
  cmd->add_flag("--no-bandwidth", o->no_bandwidth, "skip the memory bandwidth measurement");
  cmd->add_flag("--no-one-in-flight", o->no_one_in_flight,
               "with --parallel: skip the comparison run that generates for one sequence at a time");
  cmd->add_option("--isa", o->isa,
                  "CPU kernels of this instruction set instead of the best the CPU has (what an AVX2-only CPU runs, "
                  "measured on an AVX-512 one; avx512: without AMX, amx: with it)")
      ->check(CLI::IsMember({"scalar", "avx2", "avx512", "amx"}));
  return [o] { return bench(*o); };
}

}  // namespace strata::cli
