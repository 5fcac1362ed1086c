// engine/model/arch_table.h — the one statement of what each supported architecture is: its name,
// its traits, the GGUF hyper-parameter keys, and the tensors of a block (GGUF name, shape rule,
// when present, which placement part, how a tensor-parallel shard cuts it, how make-model fills
// it). The config reader, the weights binder, make-model's writer, tensor splitting, placement
// and the planner's parts read these tables and state none of it again (llama.cpp's llama-arch
// tables are the model). Data only: no GGUF reading and no arithmetic here.
//
// Adding an architecture that uses existing ops: one Arch value and one row of kArchs
// (arch_table.cpp), one forward file in engine/arch/ and its line in engine/arch/forward.cpp
// (docs/models.md, "Adding an architecture: one row and one file").
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace strata::model {

struct ModelConfig;
struct LayerWeights;
struct TensorView;

// llama also covers Mistral (and SmolLM2, TinyLlama, Llama 2/3): a sliding window when the
// metadata sets one; and Mixtral-style mixture-of-experts when llama.expert_count > 0.
// Qwen2Moe / Qwen3Moe: qwen2 / qwen3 attention with a mixture-of-experts FFN in every layer.
// Mistral3: llama's block under its own name (Mistral Small 3.x, Ministral, Devstral text towers).
// Smollm3: llama's block with RoPE left out of every 4th layer (NoPE).
// Granite / GraniteMoe: llama's block (dense / routed experts) with the embedding, each residual
// update and the logits scaled by the file's embedding_scale, residual_scale and logit_scale.
// Gemma2: gemma3's block without Q/K norms, every other layer local (window), one RoPE base, and
// soft-capped attention scores and logits.
// Glm4: llama's block (interleaved RoPE, usually on half of each head) with Q/K/V biases, gate and
// up fused in one ffn_up, and gemma's sandwich of norms (post_attention_norm, post_ffw_norm).
// Olmo2: no input norms (attention and FFN read the residual stream as it is), RMS norms of the
// whole Q and K rows (not per head), post-norms of both updates; Olmo 3 adds a sliding window on
// 3 layers of every 4.
// Starcoder2: LayerNorm (with biases) before attention and the FFN and at the head, Q/K/V and
// output biases, NeoX RoPE, a non-gated GELU FFN with biases (no window: llama.cpp ignores it).
// Cohere2: Command R7B / Command A: one LayerNorm (no bias) feeding attention and the FFN in
// parallel (both updates added to the residual at once), 3 local layers of 4 with RoPE and global
// layers without it, logits times logit_scale, the embedding as the head.
// GptOss: OpenAI's gpt-oss: llama-style pre-norm blocks with Q/K/V and output biases, a learned
// attention sink per head, every other layer local (window 128), YaRN, and routed experts in every
// layer (router and expert biases, top-k of the logits then a softmax over the k, a clamped SwiGLU).
// Deepseek2: DeepSeek V2/V3/R1, Kimi K2: multi-head latent attention (MLA: queries through a
// low-rank q_a/q_b pair, keys and values from one compressed latent per position plus one shared
// RoPE key, so the KV cache holds kv_lora_rank + rope dims per position and layer, V being a
// prefix of K), the first leading_dense_block_count layers dense, the rest routed experts (softmax
// or sigmoid gating, a selection bias, expert groups, a weight scale) plus shared experts.
enum class Arch { Llama, Qwen2, Qwen3, Gemma3, Phi3, Qwen2Moe, Qwen3Moe, Mistral3, Smollm3, Granite, GraniteMoe, Gemma2, Glm4,
                  Olmo2, GptOss, Starcoder2, Cohere2, Deepseek2 };

// How rotary embeddings pair up the dimensions of a head.
enum class RopeStyle {
  Interleaved,  // (x[2i], x[2i+1]): Meta's layout, llama.cpp's LLAMA_ROPE_TYPE_NORM (llama arch)
  Neox,         // (x[i], x[i + rope_dims/2]): HF rotate_half layout (qwen2, qwen3, gemma3, phi3)
};

// The gated FFN's activation: down(act(gate(x)) * up(x)).
enum class FfnActivation {
  Silu,      // SwiGLU (llama, qwen, phi3)
  GeluTanh,  // GeGLU with the tanh approximation of GELU (gemma3)
  SwigluOai, // gpt-oss's clamped SwiGLU: min(gate, 7) sigmoid(1.702 min(gate, 7)) (clamp(up, -7, 7) + 1)
};

// How an MoE router's logits become each token's experts and weights.
enum class ExpertGating {
  Softmax,        // softmax over all experts, then the top k (renormalised where expert_weights_norm says)
  SoftmaxTopK,    // the top k logits, then a softmax over those k (gpt-oss; llama.cpp's SOFTMAX_WEIGHT)
  Sigmoid,        // a sigmoid of each logit (DeepSeek V3; llama.cpp's expert_gating_func 2)
};

// What a block computes differently from one architecture to the next, as ModelConfig carries it
// (ModelConfig derives from this: the reader sets it from the row in one assignment).
struct ArchTraits {
  RopeStyle rope_style = RopeStyle::Interleaved;
  FfnActivation ffn_activation = FfnActivation::Silu;
  bool has_qkv_bias = false;     // Q, K, V biases ([q_dim], [kv_dim], [kv_dim] f32; qwen2)
  bool has_qk_norm = false;      // RMS norm of each head of Q and K before RoPE ([head_dim] weights; qwen3, gemma3)
  bool qk_norm_full = false;     // ... of the whole Q and K rows instead ([q_dim], [kv_dim] weights; olmo2)
  bool no_pre_norms = false;     // no attn_norm / ffn_norm: attention and FFN read the residual stream (olmo2)
  bool has_post_norms = false;   // RMS norm of the attention and FFN outputs before the residual add (gemma3)
  bool fused_qkv = false;        // one attn_qkv tensor holding Q, K, V rows (phi3)
  bool fused_gate_up = false;    // one ffn_up tensor holding gate then up rows (phi3)
  bool expert_weights_norm = false;  // top-k expert weights renormalised to sum 1 (Mixtral-style llama, qwen3moe)
  bool has_shexp_gate = false;   // the shared expert is scaled by sigmoid(ffn_gate_inp_shexp · x) (qwen2moe)
  ExpertGating expert_gating = ExpertGating::Softmax;
  bool has_attn_sinks = false;   // a learned sink logit per query head in every softmax ([n_heads] f32; gpt-oss)
  bool has_out_bias = false;     // attn_output.bias ([n_embd] f32; gpt-oss)
  bool has_moe_biases = false;   // router and routed-expert biases (ffn_gate_inp.bias, ffn_*_exps.bias; gpt-oss)
  bool layer_norm = false;       // LayerNorm (mean and variance; weight, bias) instead of RMS norms (starcoder2)
  bool has_norm_bias = false;    // attn_norm.bias, ffn_norm.bias, output_norm.bias ([n_embd] f32; starcoder2)
  bool ungated_ffn = false;      // FFN down(act(up x + b_up)) + b_down: no gate tensor (starcoder2)
  bool has_ffn_bias = false;     // ffn_up.bias [n_ff], ffn_down.bias [n_embd] (starcoder2)
  // Attention and the FFN read the same normalised input (the attention norm) and their updates are
  // summed into the residual together: the attention step computes both (cohere2).
  bool parallel_block = false;
  // The FFN input norm is stored as post_attention_norm.weight (gpt-oss's converter's name), and the
  // block has no post-attention norm.
  bool ffn_norm_post_attention = false;
  // Multi-head latent attention (deepseek2): attention.key_length is kv_lora_rank + the RoPE dims
  // (one latent "head" the KV cache stores, values its first kv_lora_rank elements), and the
  // queries' and the output's per-head sizes are key_length_mla / value_length_mla.
  bool mla = false;
};

// Whether a model of the architecture has routed experts.
enum class Experts {
  None,      // expert_count must be absent or 0
  Optional,  // llama: Mixtral-style when expert_count > 0 (experts of feed_forward_length units)
  Required,  // qwen2moe, qwen3moe
};

// One architecture: its row of kArchs.
struct ArchInfo {
  Arch arch;
  const char* name;    // general.architecture and the key prefix ("llama" -> "llama.block_count")
  const char* covers;  // the model families it runs, for the docs
  ArchTraits traits;
  Experts experts = Experts::None;
  bool expert_ff_key = false;    // an expert's units from expert_feed_forward_length (else feed_forward_length)
  bool shared_expert = false;    // a shared expert of expert_shared_feed_forward_length units (default feed_forward_length)
  // DeepSeek's MoE keys: leading_dense_block_count, expert_shared_count (shared units = count x
  // expert_feed_forward_length), expert_gating_func, expert_weights_norm / _scale, expert groups.
  bool deepseek_moe = false;
  bool embd_scale_sqrt = false;  // the token embedding times sqrt(n_embd) (gemma3)
  bool local_rope_base = false;  // local layers use rope.freq_base_swa, unscaled (gemma3, olmo2); else the model's RoPE
  bool local_base_is_global = false;  // rope.freq_base_swa defaults to rope.freq_base (olmo2), not 10000 (gemma3)
  bool local_rope_plain = false;      // local layers' cos/sin are not scaled by rope.scaling.attn_factor (olmo2)
  int64_t swa_pattern = 0;       // sliding_window_pattern when the file has none (gemma3 6); 0: every layer local
  bool reads_sliding_window = true;  // false: the window key is ignored (phi3: llama.cpp ignores it too)
  bool longrope = false;         // rope.scaling.type longrope/su with rope_factors_short/_long tensors (phi3)
  bool softcaps = false;         // attn_logit_softcapping / final_logit_softcapping keys (gemma2; defaults 50 / 30)
  bool granite_scales = false;   // embedding_scale, residual_scale, logit_scale keys (granite; defaults 1)
  int64_t no_rope_layer_step = 0;  // layer i has no RoPE when (i + 1) % step == 0 (smollm3: 4, llama.cpp's); 0: all roped
  bool global_layers_nope = false; // the global (non-window) layers have no RoPE (cohere2); the window key is required
  bool logit_scale_multiplies = false;  // logit_scale multiplies the logits (cohere2) instead of dividing them (granite)
  bool output_is_embedding = false;     // the head is always the token embedding, output.weight or not (cohere2)
  bool ties_output = false;      // make-model writes no output.weight: the embedding is the head (gemma3)
  float default_rms_eps = 1e-5f;       // what make-model writes
  float default_rope_base = 10000.0f;  // what make-model writes
  const char* builtin_chat_template = nullptr;  // chat::builtin_template_source name when the file has none
};

// Every supported architecture, in the order the docs list them.
std::span<const ArchInfo> arch_table();
// The row of an architecture; nullptr for a name Strata does not implement.
const ArchInfo* find_arch(const std::string& name);
const ArchInfo& arch_info(Arch arch);
const char* arch_name(Arch arch);
// "llama, qwen2, ..." (the names, for error texts and --help); of the rows `keep` accepts.
std::string arch_names();
std::string arch_names(bool (*keep)(const ArchInfo&));

// The hyper-parameter keys, after the "<arch>." prefix (llama.cpp's names). The reader and
// make-model's writer spell keys only through this table.
enum class HParam {
  ContextLength, EmbeddingLength, BlockCount, FeedForwardLength, HeadCount, HeadCountKv, KeyLength,
  ValueLength, RopeDimensionCount, RmsEpsilon, RopeFreqBase, RopeScalingType, RopeScalingFactor,
  RopeScalingOrigCtx, RopeScalingAttnFactor, RopeScalingYarnExtFactor, RopeScalingYarnBetaFast,
  RopeScalingYarnBetaSlow, AttentionTemperatureScale, AttentionScale, SlidingWindow, SlidingWindowPattern,
  RopeFreqBaseSwa, ExpertCount, ExpertUsedCount, ExpertFeedForwardLength, ExpertSharedFeedForwardLength,
  VocabSize, AttnLogitSoftcapping, FinalLogitSoftcapping, EmbeddingScale, ResidualScale, LogitScale,
  LayerNormEpsilon, QLoraRank, KvLoraRank, KeyLengthMla, ValueLengthMla, LeadingDenseBlockCount,
  ExpertSharedCount, ExpertWeightsScale, ExpertWeightsNorm, ExpertGatingFunc, ExpertGroupCount,
  ExpertGroupUsedCount, RopeScalingYarnLogMultiplier,
};
struct HParamInfo {
  HParam param;
  const char* suffix;  // "attention.head_count_kv"
  const char* meaning;
};
std::span<const HParamInfo> hparam_table();
// "<arch>.<suffix>".
std::string hparam_key(const std::string& arch, HParam param);

// ---- The tensors of a block ----

// A shape rule: a dimension as a function of the hyper-parameters (dim_size).
// QNorm / KNorm: head_dim, or q_dim / kv_dim where the Q/K norms span the whole row (qk_norm_full).
// QProj / AttnOut: the query projection's rows and the output projection's columns: q_dim, or with
// MLA n_heads x key_length_mla and n_heads x value_length_mla. QLora, KvLora: MLA's ranks; KvA: the
// latent and the shared RoPE key (kv_lora_rank + rope dims); HeadNope: a head's key dimensions
// without RoPE (key_length_mla - rope dims); HeadV: value_length_mla.
enum class Dim { None, Embd, QDim, KvDim, HeadDim, QNorm, KNorm, Ff, FfExp, FfShexp, Expert, One, Heads, QProj,
                 AttnOut, QLora, KvLora, KvA, HeadNope, HeadV };
int64_t dim_size(Dim dim, const ModelConfig& config);
const char* dim_name(Dim dim);  // "n_embd", "q_dim", ...

// The parts of a block that can be placed apart (docs/placement.md, "Parts of a block").
enum class Part { Attention, Ffn, Experts };
const char* part_name(Part part);  // "attention", "ffn", "experts"

enum class TensorKind {
  Norm,     // [cols] f32 norm weights: replicated to every shard
  Bias,     // [cols] f32
  Matrix,   // [rows][cols], any weight type; y = W x with x of length cols
  Experts,  // [mats][rows][cols]: the routed experts' matrices back to back
  ExpertBias,  // [mats][cols] f32: one bias per routed expert (a 2-D file tensor; rows is One)
};

// How one shard of a tensor-parallel group takes the tensor (plan::LayerShard): its KV heads
// (with their query heads) and its FFN units.
enum class Cut {
  Whole,     // the whole tensor (norms; an MoE block's router and shared expert, never cut)
  QRows,     // the query rows of the shard's heads
  KvRows,    // the key/value rows of the shard's KV heads
  QElems,    // the elements of the shard's query rows (a bias)
  KvElems,   // the elements of the shard's key/value rows
  QCols,     // the columns of the shard's query heads (attn_output)
  FfRows,    // the rows of the shard's FFN units (gate, up)
  FfCols,    // the columns of the shard's FFN units (down)
  ExpertRange,  // the matrices of the shard's experts
  QHeads,    // the elements of the shard's query heads ([n_heads] per-head values: attention sinks)
  FfElems,   // the elements of the shard's FFN units (ffn_up.bias)
  FirstShard,   // whole on the one member whose run of the part's units (KV heads for attention,
                // FFN units for the FFN) starts at 0 and is not empty, absent on the others: a bias
                // added once to the partial products the all-reduce sums (attn_output.bias, ffn_down.bias)
};

// When a block holds the tensor at all. Dense / Moe / SharedExpert are per layer (deepseek2's first
// leading_dense_block_count layers are dense); QPlain: one attn_q (not MLA's q_a/q_b pair); KvPlain:
// attn_k / attn_v (not MLA); QLoraPair: MLA with q_lora_rank > 0; Mla: every MLA layer.
enum class Need { Always, Dense, Moe, SharedExpert, QPlain, KvPlain, QLoraPair, Mla };
// Which trait makes an otherwise optional tensor required (Trait::None: required whenever needed).
// PreNorms: required unless the row has no_pre_norms (olmo2); Gated: unless ungated_ffn (starcoder2).
// Optional: never required (deepseek2's exp_probs_b.bias: V2 files have none).
enum class Trait { None, QkvBias, QkNorm, PostNorms, ShexpGate, PreNorms, Sinks, OutBias, MoeBiases, NormBias, FfnBias,
                   Gated, Optional };
// Fused into one file tensor in architectures with the matching trait (fused_qkv, fused_gate_up):
// the view is a row range of it, members in table order.
enum class Fuse { None, Qkv, GateUp };

// How make-model fills a tensor (random weights, but norms near 1 so the activations stay sane).
enum class Fill { Ones, NearOne, Random };
// Which type of make-model's mix the tensor gets.
enum class Quant { Base, MoreBits, F32 };

struct LayerTensor {
  const char* name;  // GGUF name after "blk.N."
  TensorView LayerWeights::*view;
  Part part;
  TensorKind kind;
  Dim cols, rows, mats;  // rows/mats None for a vector / a matrix
  Cut cut;
  Need need;
  Trait required_by;
  Fuse fuse;
  Fill fill;
  Quant quant;
  const char* role;  // what it is, for the docs
};
// The tensors of a block, in the order make-model writes them (llama.cpp's converters' order).
// Placement packs a part's vectors first, then its matrices, each in this order.
std::span<const LayerTensor> layer_tensors();

// One file tensor holding several views' rows (phi3's attn_qkv, and ffn_up holding gate and up).
struct FusedTensor {
  Fuse fuse;
  const char* name;  // after "blk.N."
};
std::span<const FusedTensor> fused_tensors();
const FusedTensor& fused_tensor(Fuse fuse);

// Whether block `layer` of this model holds the tensor, and whether it must.
bool tensor_needed(const LayerTensor& t, const ModelConfig& config, int64_t layer);
bool tensor_required(const LayerTensor& t, const ArchTraits& traits);
// Whether the model's architecture stores it as part of a fused tensor.
bool tensor_fused(const LayerTensor& t, const ArchTraits& traits);
// Its GGUF name after "blk.N." in a model of these traits: the row's name, except where an
// architecture's converter names it otherwise (gpt-oss's FFN norm is post_attention_norm.weight).
const char* tensor_name(const LayerTensor& t, const ArchTraits& traits);

}  // namespace strata::model
