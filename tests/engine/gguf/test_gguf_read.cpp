// tests/engine/gguf/test_gguf_read.cpp — GgufFile against the real files in ../shared/models:
// header, metadata values, tensor infos and tensor bytes.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <fstream>

#include "engine/gguf/gguf_file.h"
#include "tests/engine/gguf/gguf_test_util.h"

namespace strata::gguf {
namespace {

using test::models_dir;

#define OPEN_OR_SKIP(var, rel)                                              \
  const std::filesystem::path var##_path = models_dir() / (rel);            \
  if (!std::filesystem::exists(var##_path)) GTEST_FAIL() << "missing " << var##_path; \
  auto var##_or = GgufFile::open(var##_path);                               \
  ASSERT_TRUE(var##_or.ok()) << var##_or.error().to_string();               \
  const GgufFile& var = *var##_or

TEST(GgufRead, Stories260KHeaderAndMetadata) {
  OPEN_OR_SKIP(f, "stories260K.gguf");
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.file_size(), 1185472u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.data_offset(), 14272u);
  EXPECT_EQ(f.architecture(), "llama");
  EXPECT_EQ(f.metadata().size(), 22u);
  EXPECT_EQ(f.metadata().front().first, "general.architecture");  // file order kept
  EXPECT_EQ(f.get_string("general.name").value(), "stories260K");
  EXPECT_EQ(f.get_uint("llama.embedding_length").value(), 64u);
  EXPECT_EQ(f.get_uint("llama.block_count").value(), 5u);
  EXPECT_EQ(f.get_uint("llama.feed_forward_length").value(), 172u);
  EXPECT_EQ(f.get_uint("llama.attention.head_count").value(), 8u);
  EXPECT_EQ(f.get_uint("llama.attention.head_count_kv").value(), 4u);
  EXPECT_EQ(f.get_uint("llama.context_length").value(), 512u);
  EXPECT_FLOAT_EQ(static_cast<float>(f.get_float("llama.rope.freq_base").value()), 10000.0f);
  EXPECT_FLOAT_EQ(static_cast<float>(f.get_float("llama.attention.layer_norm_rms_epsilon").value()),
                  1e-5f);
  EXPECT_EQ(f.find("llama.block_count")->type(), ValueType::U32);
  EXPECT_TRUE(f.get_bool("tokenizer.ggml.add_bos_token").value());
  EXPECT_FALSE(f.get_bool("tokenizer.ggml.add_eos_token").value());
  EXPECT_EQ(f.get_uint("tokenizer.ggml.bos_token_id").value(), 1u);
  EXPECT_EQ(f.get_uint("tokenizer.ggml.eos_token_id").value(), 2u);
  EXPECT_EQ(f.get_string("tokenizer.ggml.model").value(), "llama");

  auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ(tokens->size(), 512u);
  EXPECT_EQ((*tokens)[0], "<unk>");
  EXPECT_EQ((*tokens)[1], "<s>");
  EXPECT_EQ((*tokens)[2], "</s>");
  EXPECT_EQ((*tokens)[3], "<0x00>");
  EXPECT_EQ((*tokens)[258], "<0xFF>");
  const Value* tv = f.find("tokenizer.ggml.tokens");
  EXPECT_EQ(tv->array_type(), ValueType::String);
  EXPECT_EQ(tv->array_size(), 512u);
  EXPECT_EQ(tv->array_string(511), (*tokens)[511]);
  EXPECT_EQ(tv->array_string(512), "");  // out of range

  // Merges are scored 0, -1, -2, ... in order after the 3 specials and 256 byte tokens.
  auto scores = f.get_float_array("tokenizer.ggml.scores");
  ASSERT_TRUE(scores.ok());
  ASSERT_EQ(scores->size(), 512u);
  EXPECT_EQ((*scores)[259], 0.0f);
  EXPECT_EQ((*scores)[260], -1.0f);
  EXPECT_EQ((*scores)[511], -252.0f);
  auto types = f.get_int_array("tokenizer.ggml.token_type");
  ASSERT_TRUE(types.ok());
  EXPECT_EQ((*types)[0], 2);    // unknown
  EXPECT_EQ((*types)[1], 3);    // control
  EXPECT_EQ((*types)[3], 6);    // byte
  EXPECT_EQ((*types)[300], 1);  // normal
}

TEST(GgufRead, Stories260KTensors) {
  OPEN_OR_SKIP(f, "stories260K.gguf");
  ASSERT_EQ(f.tensors().size(), 48u);
  for (const TensorInfo& t : f.tensors()) {
    EXPECT_EQ(t.type, kernels::DType::F32) << t.name;
    EXPECT_EQ(t.offset % f.alignment(), 0u) << t.name;
    EXPECT_EQ(t.n_bytes, t.n_elements * 4) << t.name;
    EXPECT_LE(f.data_offset() + t.offset + t.n_bytes, f.file_size()) << t.name;
  }
  const TensorInfo* emb = f.find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->dims, (std::vector<uint64_t>{64, 512}));
  EXPECT_EQ(emb->n_elements, 64u * 512u);
  EXPECT_EQ(emb->n_bytes, 131072u);
  EXPECT_EQ(emb->offset, 0u);
  const TensorInfo* down = f.find_tensor("blk.4.ffn_down.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->dims, (std::vector<uint64_t>{172, 64}));
  EXPECT_EQ(f.data_offset() + down->offset + down->n_bytes, f.file_size());  // last tensor
  EXPECT_EQ(f.find_tensor("blk.5.ffn_down.weight"), nullptr);
  EXPECT_EQ(f.find_tensor("missing"), nullptr);

  // The embedding bytes equal those in the llama2.c checkpoint (7 int32 header, then
  // token_embedding_table [512][64] f32).
  const auto bin = test::read_bytes(models_dir() / "stories260K.bin");
  if (bin.size() < 28 + 131072) GTEST_FAIL() << "stories260K.bin missing";
  EXPECT_EQ(std::memcmp(f.tensor_data(*emb), bin.data() + 28, 131072), 0);
  float first;
  std::memcpy(&first, f.tensor_data(*emb), 4);
  float expected;
  std::memcpy(&expected, bin.data() + 28, 4);
  EXPECT_EQ(first, expected);
}

TEST(GgufRead, FromBytesEqualsOpen) {
  OPEN_OR_SKIP(f, "stories260K.gguf");
  auto g = GgufFile::from_bytes(test::read_bytes(f_path));
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_EQ(g->data_offset(), f.data_offset());
  ASSERT_EQ(g->metadata().size(), f.metadata().size());
  for (size_t i = 0; i < f.metadata().size(); ++i) {
    EXPECT_EQ(g->metadata()[i].first, f.metadata()[i].first);
    EXPECT_TRUE(g->metadata()[i].second == f.metadata()[i].second) << f.metadata()[i].first;
  }
  const TensorInfo& t = g->tensors().back();
  EXPECT_EQ(std::memcmp(g->tensor_data(t), f.tensor_data(f.tensors().back()), t.n_bytes), 0);
  // Moving keeps tensor pointers valid (the bytes do not move).
  const uint8_t* before = g->tensor_data(t);
  GgufFile moved = std::move(*g);
  EXPECT_EQ(moved.tensor_data(moved.tensors().back()), before);
}

TEST(GgufRead, TinyRandomF16) {
  OPEN_OR_SKIP(f, "llama-2-tiny-random.gguf");
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.architecture(), "llama");
  EXPECT_EQ(f.get_uint("llama.embedding_length").value(), 8u);
  EXPECT_EQ(f.get_uint("llama.block_count").value(), 1u);
  EXPECT_EQ(f.get_uint("llama.context_length").value(), 4096u);
  EXPECT_EQ(f.get_uint("general.file_type").value(), 1u);
  ASSERT_EQ(f.tensors().size(), 12u);
  int f16 = 0, f32 = 0;
  for (const TensorInfo& t : f.tensors()) {
    if (t.type == kernels::DType::F16) ++f16;
    if (t.type == kernels::DType::F32) ++f32;
  }
  EXPECT_EQ(f16, 9);
  EXPECT_EQ(f32, 3);
  const TensorInfo* emb = f.find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->type, kernels::DType::F16);
  EXPECT_EQ(emb->dims, (std::vector<uint64_t>{8, 32000}));
  EXPECT_EQ(emb->n_bytes, 8u * 32000u * 2u);
  auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ(tokens->size(), 32000u);
  EXPECT_EQ((*tokens)[1], "<s>");
  EXPECT_EQ((*tokens)[29871], "\xE2\x96\x81");  // "▁", the SentencePiece space
  // Keys that are absent here: defaults apply, missing is NotFound.
  EXPECT_EQ(f.get_uint_or("llama.vocab_size", 32000).value(), 32000u);
  EXPECT_EQ(f.get_float_or("llama.rope.freq_base", 10000.0).value(), 10000.0);
  EXPECT_EQ(f.get_bool_or("tokenizer.ggml.add_bos_token", true).value(), true);
  EXPECT_EQ(f.get_string_or("tokenizer.chat_template", "none").value(), "none");
  EXPECT_EQ(f.get_uint("llama.vocab_size").error().code, Code::NotFound);
}

TEST(GgufRead, VocabOnlyFile) {
  OPEN_OR_SKIP(f, "tokenizers/llama.cpp-vocab/ggml-vocab-llama-spm.gguf");
  EXPECT_EQ(f.tensors().size(), 0u);
  EXPECT_EQ(f.get_string("tokenizer.ggml.model").value(), "llama");
  EXPECT_EQ(f.get_string("tokenizer.ggml.pre").value(), "default");
  EXPECT_EQ(f.get_uint("llama.vocab_size").value(), 32000u);
  EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens")->size(), 32000u);
  EXPECT_EQ(f.get_float_array("tokenizer.ggml.scores")->size(), 32000u);
  // This file ends without padding after the metadata: the data section is empty.
  EXPECT_EQ(f.data_offset(), f.file_size());
}

TEST(GgufRead, LargeBpeVocab) {
  OPEN_OR_SKIP(f, "tokenizers/vocab-llama3.1.gguf");
  EXPECT_EQ(f.tensors().size(), 0u);
  EXPECT_EQ(f.get_string("tokenizer.ggml.model").value(), "gpt2");
  auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok());
  EXPECT_EQ(tokens->size(), 128256u);
  EXPECT_EQ((*tokens)[128000], "<|begin_of_text|>");
  EXPECT_EQ(f.find("tokenizer.ggml.merges")->array_size(), 280147u);
  EXPECT_EQ(f.get_uint("tokenizer.ggml.bos_token_id").value(), 128000u);
  EXPECT_EQ(f.get_uint("tokenizer.ggml.eos_token_id").value(), 128009u);
  EXPECT_NE(f.get_string("tokenizer.chat_template").value().find("start_header_id"),
            std::string::npos);
}

TEST(GgufRead, AllSharedGgufFilesParse) {
  int opened = 0;
  for (const auto& dir : {models_dir(), models_dir() / "tokenizers",
                          models_dir() / "tokenizers" / "llama.cpp-vocab"}) {
    ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir << ": setup puts the shared models there";
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() != ".gguf") continue;
      auto f = GgufFile::open(entry.path());
      ASSERT_TRUE(f.ok()) << f.error().to_string();
      EXPECT_FALSE(f->architecture().empty()) << entry.path();
      ++opened;
    }
  }
  if (opened == 0) GTEST_FAIL() << "no shared models";
  EXPECT_GE(opened, 10);
}

TEST(GgufRead, OpenErrors) {
  auto missing = GgufFile::open("/nonexistent/dir/model.gguf");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, Code::NotFound);
  EXPECT_NE(missing.error().message.find("/nonexistent/dir/model.gguf"), std::string::npos);
  EXPECT_NE(missing.error().message.find("No such file"), std::string::npos);

  auto dir = GgufFile::open(std::filesystem::temp_directory_path());
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.error().code, Code::Io);
  EXPECT_NE(dir.error().message.find("not a regular file"), std::string::npos);

  const auto empty = std::filesystem::temp_directory_path() /
                     ("strata_gguf_empty_" + std::to_string(::getpid()) + ".gguf");
  { std::ofstream(empty, std::ios::binary); }
  auto e = GgufFile::open(empty);
  std::filesystem::remove(empty);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().code, Code::Corrupt);
  EXPECT_NE(e.error().message.find("empty"), std::string::npos);
  EXPECT_NE(e.error().message.find(empty.string()), std::string::npos);  // names the path
}

}  // namespace
}  // namespace strata::gguf
