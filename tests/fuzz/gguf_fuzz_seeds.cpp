// tests/fuzz/gguf_fuzz_seeds.cpp — writes a seed corpus for gguf_fuzz into a folder: small
// writer-made files (every value kind, several tensor types) and stories260K's metadata.
// Usage: gguf_fuzz_seeds <dir>
#include <cstdio>
#include <filesystem>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"

using namespace strata::gguf;
using strata::kernels::DType;

namespace {

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 7);
  return v;
}

bool save(const GgufWriter& w, const std::filesystem::path& p) {
  auto s = w.write(p);
  if (!s.ok()) std::fprintf(stderr, "%s\n", s.error().to_string().c_str());
  return s.ok();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  bool ok = true;

  GgufWriter small;
  small.set_string("general.architecture", "llama");
  small.set_u32("llama.block_count", 2);
  small.set_f32("llama.rope.freq_base", 10000.0f);
  small.set_bool("tokenizer.ggml.add_bos_token", true);
  small.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "hello", ""});
  small.set_f32_array("tokenizer.ggml.scores", {0.0f, -1.0f, -2.5f, 3.0f, 4.0f});
  small.set("t.i8", Value::i8(-3));
  small.set("t.u16", Value::u16(7));
  small.set("t.i16", Value::i16(-7));
  small.set("t.i64", Value::i64(-1));
  small.set("t.f64", Value::f64(0.5));
  small.set("t.u64_array", Value::u64_array({1, 2}));
  small.set("t.bool_array", Value::bool_array({true, false}));
  small.set("t.nested", Value::array_of_arrays({Value::i32_array({1, 2}), Value::string_array({"x"})}));
  ok &= small.add_tensor("a.weight", DType::F32, {4, 3}, pattern(48)).ok();
  ok &= small.add_tensor("b.weight", DType::F16, {8}, pattern(16)).ok();
  ok &= small.add_tensor("c.weight", DType::Q8_0, {32, 2}, pattern(68)).ok();
  ok &= small.add_tensor("d.weight", DType::Q4_K, {256}, pattern(144)).ok();
  ok &= save(small, dir / "small.gguf");

  GgufWriter aligned(16);
  aligned.set_string("general.architecture", "qwen2");
  ok &= aligned.add_tensor("x", DType::BF16, {3, 1, 1, 2}, pattern(12)).ok();
  ok &= save(aligned, dir / "aligned16.gguf");

  // stories260K's metadata (512-token vocab) with its tensor list shrunk to a few small ones.
  const auto stories = std::filesystem::path(STRATA_SHARED_MODELS_DIR) / "stories260K.gguf";
  auto f = GgufFile::open(stories);
  if (f.ok()) {
    GgufWriter w;
    for (const auto& [k, v] : f->metadata()) w.set(k, v);
    int n = 0;
    for (const TensorInfo& t : f->tensors()) {
      if (t.n_bytes > 1024 || n >= 4) continue;
      const uint8_t* p = f->tensor_data(t);
      ok &= w.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(p, p + t.n_bytes)).ok();
      ++n;
    }
    ok &= save(w, dir / "stories260K-meta.gguf");
    std::filesystem::copy_file(stories, dir / "stories260K.gguf",
                               std::filesystem::copy_options::overwrite_existing);
  } else {
    std::fprintf(stderr, "skipping stories260K: %s\n", f.error().to_string().c_str());
  }
  return ok ? 0 : 1;
}
