// app/engine_cli/cmd_make_model.cpp — `strata-engine make-model`: a random-weight GGUF of any
// shape and type, with the vocabulary of another GGUF file.
#include <cstdio>
#include <memory>
#include <string>

#include "app/engine_cli/commands.h"
#include "app/engine_cli/common.h"
#include "engine/model/random_model.h"

namespace strata::cli {

namespace {
struct MakeModelOptions {
  model::RandomModelSpec spec;
  std::string arch = "llama";
  std::string vocab_from;
  std::string out;
  int threads = 0;
};

int make_model(MakeModelOptions& o) {
  const model::ArchInfo* arch = model::find_arch(o.arch);
  if (!arch) return report(Error{Code::InvalidArgument, "--arch '" + o.arch + "' is not one of " + model::arch_names()});
  o.spec.arch = arch->arch;
  o.spec.n_threads = resolve_threads(o.threads);
  if (o.spec.n_kv_heads == 0) o.spec.n_kv_heads = o.spec.n_heads;
  if (Status s = model::validate(o.spec); !s.ok()) return report(s.error());
  auto vocab = gguf::GgufFile::open(o.vocab_from);
  if (!vocab.ok()) return report(vocab.error());
  if (Status s = model::write_random_model(o.spec, *vocab, o.out); !s.ok()) return report(s.error());
  return 0;
}
}  // namespace

Command add_make_model_command(CLI::App& app) {
  auto o = std::make_shared<MakeModelOptions>();
  CLI::App* cmd = app.add_subcommand("make-model", "write a random-weight GGUF model (for tests and benchmarks)");
  cmd->add_option("--arch", o->arch, model::arch_names());
  cmd->add_option("--name", o->spec.name, "general.name");
  cmd->add_option("--dim", o->spec.n_embd, "hidden size")->check(CLI::Range(int64_t{1}, int64_t{65536}));
  cmd->add_option("--layers", o->spec.n_layers, "blocks")->check(CLI::Range(int64_t{1}, int64_t{1024}));
  cmd->add_option("--heads", o->spec.n_heads, "attention heads")->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd->add_option("--kv-heads", o->spec.n_kv_heads, "key/value heads (default: --heads)")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd->add_option("--ffn", o->spec.n_ff, "feed-forward size")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--ctx", o->spec.n_ctx, "context length")->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  cmd->add_option("--rope-dims", o->spec.rope_dims, "rotated dimensions of a head, rope.dimension_count (default: all; glm4's models rotate half)")
      ->check(CLI::Range(int64_t{0}, int64_t{1024}));
  cmd->add_option("--head-dim", o->spec.head_dim, "head size (default: dim / heads)")
      ->check(CLI::Range(int64_t{0}, int64_t{1024}));
  cmd->add_option("--sliding-window", o->spec.sliding_window,
                  "attention window in positions: the local layers' (gemma2/3, olmo2, gpt-oss; cohere2 needs one); llama's is written and ignored")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  cmd->add_option("--swa-pattern", o->spec.swa_pattern, "every N-th layer global, the others local (defaults: gemma3 6, olmo2 and cohere2 4, gemma2 and gpt-oss 2)")
      ->check(CLI::Range(int64_t{0}, int64_t{4096}));
  cmd->add_option("--experts", o->spec.n_expert,
                  "mixture of experts: routed experts per layer (qwen2moe, qwen3moe, granitemoe, gpt-oss; llama, mistral3: Mixtral-style)")
      ->check(CLI::Range(int64_t{0}, int64_t{4096}));
  cmd->add_option("--experts-used", o->spec.n_expert_used, "experts each token runs (top-k)")
      ->check(CLI::Range(int64_t{0}, int64_t{4096}));
  cmd->add_option("--expert-ff", o->spec.n_ff_exp, "one expert's feed-forward size (qwen*moe, granitemoe, gpt-oss; default --ffn)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  cmd->add_option("--shared-expert-ff", o->spec.n_ff_shexp, "qwen2moe: the shared expert's size (default --ffn)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  cmd->add_option("--q-lora-rank", o->spec.q_lora_rank, "deepseek2: rank of the queries' q_a/q_b pair (0: one attn_q, as V2-Lite)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 16));
  cmd->add_option("--kv-lora-rank", o->spec.kv_lora_rank, "deepseek2: the compressed KV latent's size (the cache row is this + --rope-dims)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 16));
  cmd->add_option("--v-head-dim", o->spec.v_head_dim, "deepseek2: a head's output size (default --head-dim minus --rope-dims)")
      ->check(CLI::Range(int64_t{0}, int64_t{4096}));
  cmd->add_option("--dense-layers", o->spec.n_dense_lead, "deepseek2: leading blocks with a dense FFN of --ffn units")
      ->check(CLI::Range(int64_t{0}, int64_t{1024}));
  cmd->add_option("--shared-experts", o->spec.n_shared_experts, "deepseek2: shared experts of --expert-ff units (default 1)")
      ->check(CLI::Range(int64_t{0}, int64_t{64}));
  cmd->add_option("--gating", o->spec.gating, "deepseek2: expert gating, sigmoid (V3, default) or softmax (V2)");
  cmd->add_option("--selection-bias", o->spec.selection_bias, "deepseek2: write exp_probs_b, the experts' selection bias (default true; V2 files have none)");
  cmd->add_option("--expert-groups", o->spec.expert_groups, "deepseek2: groups of experts (0: none)")
      ->check(CLI::Range(int64_t{0}, int64_t{4096}));
  cmd->add_option("--expert-groups-used", o->spec.expert_groups_used, "deepseek2: groups a token's experts come from")
      ->check(CLI::Range(int64_t{0}, int64_t{4096}));
  cmd->add_option("--expert-weights-scale", o->spec.expert_weights_scale, "deepseek2: the routed weights' factor (default 1)");
  cmd->add_option("--expert-weights-norm", o->spec.expert_weights_norm, "deepseek2: renormalise the top-k weights to sum 1 (default true)");
  cmd->add_option("--yarn-log-mul", o->spec.yarn_log_mul, "deepseek2 with --yarn-factor: rope.scaling.yarn_log_multiplier (0.1 x mscale_all_dim; V3: 0.1)");
  cmd->add_option("--attn-softcap", o->spec.attn_softcap, "gemma2: attention score soft-cap (default 50)");
  cmd->add_option("--final-softcap", o->spec.final_softcap, "gemma2: logit soft-cap (default 30)");
  cmd->add_option("--yarn-factor", o->spec.yarn_factor, "write YaRN rope scaling with this factor (> 1)");
  cmd->add_option("--yarn-orig-ctx", o->spec.yarn_orig_ctx, "YaRN's original context (default ctx / factor)");
  cmd->add_flag("!--no-longrope", o->spec.longrope, "phi3: leave out the long-context RoPE factors");
  cmd->add_option("--type", o->spec.type, "f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k iq4_nl iq4_xs tq1_0 tq2_0 mxfp4, or a mix: q4_k_m q5_k_m mxfp4_moe (MXFP4 experts, Q8_0 the rest)");
  cmd->add_option("--std", o->spec.stddev, "standard deviation of the weights")->check(CLI::Range(0.0f, 10.0f));
  cmd->add_option("--seed", o->spec.seed, "random seed");
  cmd->add_option("--row-pool", o->spec.row_pool,
                  "each matrix's rows repeat a pool of this many distinct rows (fast; for read-bound benchmarks)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--vocab-from", o->vocab_from, "GGUF file whose tokenizer.* keys are copied")->required();
  cmd->add_option("-t,--threads", o->threads, "threads (default: all cores)")->check(CLI::Range(0, 1024));
  cmd->add_option("-o,--out", o->out, "output .gguf")->required();
  o->spec.n_kv_heads = 0;
  return [o] { return make_model(*o); };
}

}  // namespace strata::cli
