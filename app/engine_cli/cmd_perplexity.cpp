// app/engine_cli/cmd_perplexity.cpp — `strata-engine perplexity`: llama-perplexity's figure over a
// text file (engine/eval/perplexity.h), and the quantization checks: --save-logits writes the
// scored positions' logits, --kl-base compares against such a file (KL divergence, top-1
// agreement, both perplexities). Progress on stderr, the result on stdout.
//
// Logits file (little-endian): "STRPPL01" | u32 n_vocab | u32 n_ctx | u32 n_tokens |
// i32 tokens[n_tokens] (the text as scored, to refuse a file of another text or tokenizer) |
// u32 n_rows | f32 logits[n_rows][n_vocab].
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "app/engine_cli/commands.h"
#include "app/engine_cli/common.h"
#include "app/engine_cli/placement_cli.h"
#include "engine/eval/perplexity.h"

namespace strata::cli {

namespace {

constexpr char kMagic[8] = {'S', 'T', 'R', 'P', 'P', 'L', '0', '1'};

struct PerplexityCliOptions {
  ModelOptions model;
  DeviceOptions devices;
  std::string file;
  int64_t chunks = 0;
  std::string save_logits;
  std::string kl_base;
};

struct LogitsFileHeader {
  uint32_t n_vocab = 0, n_ctx = 0;
  std::vector<int32_t> tokens;
  uint32_t n_rows = 0;
};

Status write_u32(std::ofstream& out, uint32_t v) {
  out.write(reinterpret_cast<const char*>(&v), sizeof v);
  return out ? Status{} : Status(Error{Code::Io, "write failed"});
}

Expected<LogitsFileHeader> read_header(std::ifstream& in, const std::string& path) {
  char magic[8] = {};
  LogitsFileHeader h;
  uint32_t n_tokens = 0;
  in.read(magic, sizeof magic);
  if (!in || std::memcmp(magic, kMagic, sizeof magic) != 0)
    return Error{Code::Corrupt, path + ": not a strata-engine perplexity logits file (magic STRPPL01)"};
  in.read(reinterpret_cast<char*>(&h.n_vocab), 4);
  in.read(reinterpret_cast<char*>(&h.n_ctx), 4);
  in.read(reinterpret_cast<char*>(&n_tokens), 4);
  if (!in || n_tokens > (1u << 28)) return Error{Code::Corrupt, path + ": truncated or absurd header"};
  h.tokens.resize(n_tokens);
  in.read(reinterpret_cast<char*>(h.tokens.data()), static_cast<std::streamsize>(n_tokens) * 4);
  in.read(reinterpret_cast<char*>(&h.n_rows), 4);
  if (!in) return Error{Code::Corrupt, path + ": truncated header"};
  return h;
}

int perplexity_main(const PerplexityCliOptions& o) {
  std::ifstream text_in(o.file, std::ios::binary);
  if (!text_in) return report(Error{Code::NotFound, "cannot read text file '" + o.file + "'"});
  const std::string text((std::istreambuf_iterator<char>(text_in)), std::istreambuf_iterator<char>());

  ModelOptions mo = o.model;
  if (mo.ctx == 0) mo.ctx = 512;  // llama-perplexity's default window
  auto model = load_model(mo);
  if (!model.ok()) return report(model.error());
  const model::Model& m = **model;
  const tokenizer::Tokenizer& tok = m.tokenizer();
  // As llama-perplexity: the whole text tokenized once (BOS first when the model adds one).
  const std::vector<int32_t> tokens = tok.encode(text, /*add_special=*/true, /*parse_special=*/false);
  auto runtime = build_runtime(m, mo, o.devices, 1);
  if (!runtime.ok()) return report(runtime.error());
  exec::Session session(*runtime->pipeline, 0);

  eval::PerplexityOptions po;
  po.n_ctx = mo.ctx;
  po.max_chunks = o.chunks;
  if (tok.vocab().add_bos && tok.vocab().bos_id >= 0) po.bos = tok.vocab().bos_id;
  const int64_t n_vocab = m.config().n_vocab;
  const int64_t rows_per_chunk = po.n_ctx - 1 - po.n_ctx / 2;
  int64_t n_chunks = static_cast<int64_t>(tokens.size()) / po.n_ctx;
  if (o.chunks > 0) n_chunks = std::min(n_chunks, o.chunks);
  if (n_chunks == 0)  // the library's error, before any progress line
    return report(eval::perplexity(session, tokens, po, {}, {}).error());
  std::fprintf(stderr, "perplexity: %zu tokens, %lld window(s) of %lld, scoring %lld positions each\n", tokens.size(),
               static_cast<long long>(n_chunks), static_cast<long long>(po.n_ctx), static_cast<long long>(rows_per_chunk));

  std::ofstream save;
  if (!o.save_logits.empty()) {
    save.open(o.save_logits, std::ios::binary | std::ios::trunc);
    if (!save) return report(Error{Code::Io, "cannot write '" + o.save_logits + "'"});
    save.write(kMagic, sizeof kMagic);
    (void)write_u32(save, static_cast<uint32_t>(n_vocab));
    (void)write_u32(save, static_cast<uint32_t>(po.n_ctx));
    (void)write_u32(save, static_cast<uint32_t>(tokens.size()));
    save.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(tokens.size() * 4));
    if (!write_u32(save, static_cast<uint32_t>(n_chunks * rows_per_chunk)).ok())
      return report(Error{Code::Io, "cannot write '" + o.save_logits + "'"});
  }
  std::ifstream base;
  eval::LogitComparison cmp;
  std::vector<float> base_row;
  if (!o.kl_base.empty()) {
    base.open(o.kl_base, std::ios::binary);
    if (!base) return report(Error{Code::NotFound, "cannot read --kl-base file '" + o.kl_base + "'"});
    auto h = read_header(base, o.kl_base);
    if (!h.ok()) return report(h.error());
    if (h->n_vocab != n_vocab || h->n_ctx != po.n_ctx || h->tokens != tokens ||
        h->n_rows < static_cast<uint32_t>(n_chunks * rows_per_chunk))
      return report(Error{Code::InvalidArgument,
                          o.kl_base + ": saved for another run (vocabulary " + std::to_string(h->n_vocab) + " vs " +
                              std::to_string(n_vocab) + ", window " + std::to_string(h->n_ctx) + " vs " +
                              std::to_string(po.n_ctx) + ", " + std::to_string(h->tokens.size()) + " vs " +
                              std::to_string(tokens.size()) + " tokens" +
                              (h->tokens.size() == tokens.size() && h->tokens != tokens ? ", different tokens" : "") +
                              ", " + std::to_string(h->n_rows) + " rows)"});
    base_row.resize(static_cast<size_t>(n_vocab));
  }

  auto sink = [&](const float* logits, int64_t nv, int32_t next) -> Status {
    if (save.is_open()) {
      save.write(reinterpret_cast<const char*>(logits), static_cast<std::streamsize>(nv * 4));
      if (!save) return Error{Code::Io, "short write to '" + o.save_logits + "'"};
    }
    if (base.is_open()) {
      base.read(reinterpret_cast<char*>(base_row.data()), static_cast<std::streamsize>(nv * 4));
      if (!base) return Error{Code::Corrupt, o.kl_base + ": fewer logit rows than its header says"};
      cmp.add(base_row.data(), logits, nv, next);
    }
    return {};
  };
  const auto t0 = std::chrono::steady_clock::now();
  auto result = eval::perplexity(
      session, tokens, po,
      [](const eval::PerplexityProgress& p) {
        std::fprintf(stderr, "[%lld/%lld] PPL %.4f\n", static_cast<long long>(p.chunk),
                     static_cast<long long>(p.n_chunks), p.ppl);
      },
      save.is_open() || base.is_open() ? eval::ScoredLogitsSink(sink) : eval::ScoredLogitsSink());
  if (!result.ok()) return report(result.error());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("Final estimate: PPL = %.4f +/- %.4f (%lld tokens scored, window %lld, %lld window(s); %.1f s)\n",
              result->ppl, result->ppl_stderr, static_cast<long long>(result->scored),
              static_cast<long long>(po.n_ctx), static_cast<long long>(result->chunk), seconds);
  if (base.is_open()) {
    std::printf("KL divergence vs %s: mean %.6f +/- %.6f, max %.6f; top-1 agreement %.2f%%; PPL base %.4f, this %.4f\n",
                o.kl_base.c_str(), cmp.mean_kl(), cmp.kl_stderr(), cmp.max_kl(), 100.0 * cmp.top1_agreement(),
                cmp.base_ppl(), cmp.test_ppl());
  }
  if (save.is_open()) {
    save.close();
    if (!save) return report(Error{Code::Io, "cannot finish '" + o.save_logits + "'"});
  }
  return 0;
}

}  // namespace

Command add_perplexity_command(CLI::App& app) {
  auto o = std::make_shared<PerplexityCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "perplexity", "perplexity over a text file, as llama-perplexity computes it; KL divergence against saved logits");
  add_model_options(*cmd, o->model);
  add_device_options(*cmd, o->devices);
  cmd->add_option("-f,--file", o->file, "text file")->required();
  cmd->add_option("--chunks", o->chunks, "score at most this many windows (default: all)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  cmd->add_option("--save-logits", o->save_logits, "write the scored positions' logits (float32) to this file");
  cmd->add_option("--kl-base", o->kl_base,
                  "compare with logits saved by --save-logits (e.g. of an F16 file of the same model)");
  return [o] { return perplexity_main(*o); };
}

}  // namespace strata::cli
