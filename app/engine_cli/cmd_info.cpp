// app/engine_cli/cmd_info.cpp — `strata-engine info`: metadata, tensors, types, parameters, bytes.
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "app/engine_cli/commands.h"
#include "app/engine_cli/common.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model_config.h"

namespace strata::cli {

namespace {

// How the router's logits become weights, in words (info's text and JSON).
const char* gating_text(const model::ModelConfig& c) {
  switch (c.expert_gating) {
    case model::ExpertGating::Softmax: return "softmax, then top k";
    case model::ExpertGating::SoftmaxTopK: return "softmax of the top-k logits";
    case model::ExpertGating::Sigmoid: return "sigmoid, then top k";
  }
  return "?";
}
struct InfoOptions {
  std::string model;
  bool tensors = false;
  bool json = false;
};

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024.0 && u < 4) {
    b /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", b, units[u]);
  return buf;
}

std::string dims_text(const std::vector<uint64_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? " x " : "") + std::to_string(dims[i]);
  return s;
}

int info(const InfoOptions& o) {
  auto path = resolve_model_path(o.model);
  if (!path.ok()) return report(path.error());
  auto file = gguf::GgufFile::open(*path);
  if (!file.ok()) return report(file.error());
  const gguf::GgufFile& f = *file;

  uint64_t params = 0, bytes = 0;
  std::map<std::string, std::pair<uint64_t, uint64_t>> by_type;  // type -> (tensors, bytes)
  for (const gguf::TensorInfo& t : f.tensors()) {
    params += t.n_elements;
    bytes += t.n_bytes;
    auto& e = by_type[kernels::dtype_name(t.type)];
    e.first += 1;
    e.second += t.n_bytes;
  }
  auto config = model::read_model_config(f);

  if (o.json) {
    nlohmann::json j;
    j["path"] = path->string();
    j["gguf_version"] = f.version();
    j["file_bytes"] = f.file_size();
    j["architecture"] = f.architecture();
    j["parameters"] = params;
    j["tensor_bytes"] = bytes;
    j["tensor_count"] = f.tensors().size();
    for (const auto& [type, e] : by_type) j["types"][type] = {{"tensors", e.first}, {"bytes", e.second}};
    for (const gguf::UnsupportedTensor& u : f.unsupported_tensors()) {
      const char* name = kernels::ggml_type_name_unhandled(u.raw_type);
      j["unsupported_tensors"].push_back({{"name", u.name}, {"type_id", u.raw_type},
                                          {"type", name ? name : "unknown"}, {"dims", u.dims}});
    }
    nlohmann::json meta = nlohmann::json::object();
    for (const auto& [key, value] : f.metadata()) meta[key] = value.to_display_string(16);
    j["metadata"] = meta;
    if (config.ok()) {
      const auto& c = *config;
      j["model"] = {{"n_vocab", c.n_vocab}, {"n_ctx_train", c.n_ctx_train}, {"n_embd", c.n_embd},
                    {"n_layers", c.n_layers}, {"n_heads", c.n_heads}, {"n_kv_heads", c.n_kv_heads},
                    {"head_dim", c.head_dim}, {"n_ff", c.n_ff}, {"rope_freq_base", c.rope_freq_base},
                    {"tied_output", c.tied_output}};
      if (c.is_moe())
        j["model"]["experts"] = {{"n_expert", c.n_expert}, {"n_expert_used", c.n_expert_used},
                                 {"n_ff_exp", c.n_ff_exp}, {"n_ff_shexp", c.n_ff_shexp},
                                 {"weights_normalised", c.expert_weights_norm},
                                 {"gating", gating_text(c)}, {"dense_leading_layers", c.n_dense_lead},
                                 {"weights_scale", c.expert_weights_scale}, {"groups", c.n_expert_groups},
                                 {"groups_used", c.n_group_used}};
      if (c.mla)
        j["model"]["mla"] = {{"q_lora_rank", c.q_lora_rank}, {"kv_lora_rank", c.kv_lora_rank},
                             {"key_length", c.head_dim_k_mla}, {"value_length", c.head_dim_v_mla},
                             {"rope_dims", c.rope_dims}, {"kv_cache_elements_per_position", c.kv_planes() * c.kv_dim()}};
    } else {
      j["model_error"] = config.error().message;
    }
    if (o.tensors) {
      for (const gguf::TensorInfo& t : f.tensors())
        j["tensors"].push_back({{"name", t.name}, {"type", kernels::dtype_name(t.type)}, {"dims", t.dims},
                                {"bytes", t.n_bytes}, {"offset", t.offset}});
    }
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }

  std::printf("file         %s\n", path->string().c_str());
  std::printf("gguf         v%u, %s, %zu tensors, %zu metadata keys\n", f.version(),
              human_bytes(static_cast<double>(f.file_size())).c_str(), f.tensors().size(), f.metadata().size());
  std::printf("architecture %s\n", f.architecture().empty() ? "(none: vocabulary only?)" : f.architecture().c_str());
  std::printf("parameters   %llu (%.3f B)\n", static_cast<unsigned long long>(params), params / 1e9);
  std::printf("tensor bytes %llu (%s)\n", static_cast<unsigned long long>(bytes),
              human_bytes(static_cast<double>(bytes)).c_str());
  for (const auto& [type, e] : by_type)
    std::printf("  %-6s %5llu tensors %s\n", type.c_str(), static_cast<unsigned long long>(e.first),
                human_bytes(static_cast<double>(e.second)).c_str());
  if (!f.unsupported_tensors().empty()) {
    std::printf("unsupported  %zu tensors of types this build does not read:\n", f.unsupported_tensors().size());
    for (const gguf::UnsupportedTensor& u : f.unsupported_tensors()) {
      const char* name = kernels::ggml_type_name_unhandled(u.raw_type);
      std::printf("  %-40s type %u (%s) [%s]\n", u.name.c_str(), u.raw_type, name ? name : "unknown to ggml",
                  dims_text(u.dims).c_str());
    }
  }
  if (config.ok()) {
    const auto& c = *config;
    std::printf("model        vocab %lld, ctx %lld, dim %lld, layers %lld, heads %lld/%lld, head %lld, ffn %lld, rope base %g%s\n",
                (long long)c.n_vocab, (long long)c.n_ctx_train, (long long)c.n_embd, (long long)c.n_layers,
                (long long)c.n_heads, (long long)c.n_kv_heads, (long long)c.head_dim, (long long)c.n_ff,
                c.rope_freq_base, c.tied_output ? ", tied output" : "");
    if (c.mla)
      std::printf("attention    latent (MLA): q rank %lld, kv rank %lld, query heads of %lld (rope %lld), outputs of %lld;"
                  " KV cache %lld elements a position and layer\n",
                  (long long)c.q_lora_rank, (long long)c.kv_lora_rank, (long long)c.head_dim_k_mla, (long long)c.rope_dims,
                  (long long)c.head_dim_v_mla, (long long)(c.kv_planes() * c.kv_dim()));
    if (c.is_moe()) {
      std::string extra;
      if (c.n_dense_lead > 0) extra += ", dense layers 0-" + std::to_string(c.n_dense_lead - 1);
      if (c.n_expert_groups > 1)
        extra += ", " + std::to_string(c.n_group_used) + " of " + std::to_string(c.n_expert_groups) + " groups";
      if (c.expert_weights_scale != 1.0f) {
        char scale[32];
        std::snprintf(scale, sizeof(scale), ", weights x %g", c.expert_weights_scale);
        extra += scale;
      }
      std::printf("experts      %lld per layer, top-%lld (%s%s), expert ffn %lld%s%s\n", (long long)c.n_expert,
                  (long long)c.n_expert_used, gating_text(c), c.expert_weights_norm ? ", weights renormalised" : "",
                  (long long)c.n_ff_exp,
                  c.n_ff_shexp > 0 ? (", shared expert ffn " + std::to_string(c.n_ff_shexp)).c_str() : "",
                  extra.c_str());
    }
  } else if (!f.architecture().empty()) {
    std::printf("model        not runnable: %s\n", config.error().message.c_str());
  }
  std::printf("metadata\n");
  for (const auto& [key, value] : f.metadata())
    std::printf("  %-40s %s\n", key.c_str(), value.to_display_string(8).c_str());
  if (o.tensors) {
    std::printf("tensors\n");
    for (const gguf::TensorInfo& t : f.tensors())
      std::printf("  %-32s %-5s %-20s %s\n", t.name.c_str(), kernels::dtype_name(t.type), dims_text(t.dims).c_str(),
                  human_bytes(static_cast<double>(t.n_bytes)).c_str());
  }
  return 0;
}
}  // namespace

Command add_info_command(CLI::App& app) {
  auto o = std::make_shared<InfoOptions>();
  CLI::App* cmd = app.add_subcommand("info", "show a GGUF file's metadata, tensors and sizes");
  cmd->add_option("-m,--model,file", o->model, "GGUF file");
  cmd->add_flag("--tensors", o->tensors, "list every tensor");
  cmd->add_flag("--json", o->json, "print JSON");
  return [o] { return info(*o); };
}

}  // namespace strata::cli
