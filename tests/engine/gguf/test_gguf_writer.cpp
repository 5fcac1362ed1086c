// tests/engine/gguf/test_gguf_writer.cpp — GgufWriter round trips (every value type, nested
// arrays, several tensor types, alignment), a hand-built v2 file, typed getters, Value display.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "tests/engine/gguf/gguf_test_util.h"

namespace strata::gguf {
namespace {

using kernels::DType;
using test::pattern_bytes;

std::vector<std::pair<std::string, Value>> all_value_kinds() {
  return {
      {"t.u8", Value::u8(200)},
      {"t.i8", Value::i8(-100)},
      {"t.u16", Value::u16(60000)},
      {"t.i16", Value::i16(-30000)},
      {"t.u32", Value::u32(4000000000u)},
      {"t.i32", Value::i32(-2000000000)},
      {"t.f32", Value::f32(1.5e-5f)},
      {"t.bool", Value::boolean(true)},
      {"t.string", Value::string("h\xC3\xA9llo \"q\"\n")},
      {"t.empty_string", Value::string("")},
      {"t.u64", Value::u64(std::numeric_limits<uint64_t>::max())},
      {"t.i64", Value::i64(std::numeric_limits<int64_t>::min())},
      {"t.f64", Value::f64(-2.718281828459045)},
      {"a.u8", Value::u8_array({0, 1, 255})},
      {"a.i8", Value::i8_array({-128, 0, 127})},
      {"a.u16", Value::u16_array({1, 65535})},
      {"a.i16", Value::i16_array({-32768, 32767})},
      {"a.u32", Value::u32_array({7, 4294967295u})},
      {"a.i32", Value::i32_array({-1, 2, -3})},
      {"a.u64", Value::u64_array({1ull << 63, 5})},
      {"a.i64", Value::i64_array({-(1ll << 62), 9})},
      {"a.f32", Value::f32_array({0.25f, -1.0f, 3e38f})},
      {"a.f64", Value::f64_array({1e300, -0.5})},
      {"a.bool", Value::bool_array({true, false, true})},
      {"a.string", Value::string_array({"a", "", "ccc", std::string("\0x", 2)})},
      {"a.empty", Value::string_array({})},
      {"a.empty_f32", Value::f32_array({})},
      {"a.nested", Value::array_of_arrays({Value::i32_array({1, 2, 3}), Value::string_array({"x", "yz"}),
                                           Value::array_of_arrays({Value::f64_array({0.5})}),
                                           Value::u8_array({})})},
  };
}

TEST(GgufWriter, RoundTripEveryValueTypeAndTensorType) {
  GgufWriter w;
  const auto kinds = all_value_kinds();
  for (const auto& [k, v] : kinds) w.set(k, v);
  struct Spec {
    std::string name;
    DType type;
    std::vector<uint64_t> dims;
    uint64_t bytes;
  };
  const std::vector<Spec> specs = {
      {"f32", DType::F32, {3, 5}, 60},          // odd sizes force padding between tensors
      {"f16", DType::F16, {7}, 14},
      {"bf16", DType::BF16, {2, 3, 2}, 24},
      {"q8_0", DType::Q8_0, {64, 3}, 6 * 34},
      {"q4_0", DType::Q4_0, {32, 1, 1, 2}, 2 * 18},
      {"q4_k", DType::Q4_K, {256, 2}, 2 * 144},
      {"q6_k", DType::Q6_K, {512}, 2 * 210},
  };
  for (size_t i = 0; i < specs.size(); ++i) {
    ASSERT_TRUE(w.add_tensor(specs[i].name, specs[i].type, specs[i].dims,
                             pattern_bytes(specs[i].bytes, static_cast<uint8_t>(i)))
                    .ok());
  }
  ASSERT_TRUE(w.add_tensor_generated("gen", DType::F32, {4}, [](uint8_t* dst, uint64_t n) {
                 ASSERT_EQ(n, 16u);
                 const float v[4] = {1, 2, 3, 4};
                 std::memcpy(dst, v, 16);
               }).ok());

  auto bytes = w.to_bytes();
  ASSERT_TRUE(bytes.ok()) << bytes.error().to_string();
  auto f = GgufFile::from_bytes(*bytes);
  ASSERT_TRUE(f.ok()) << f.error().to_string();
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_EQ(f->data_offset() % 32, 0u);
  EXPECT_EQ(f->file_size() % 32, 0u);  // the last tensor is padded too
  ASSERT_EQ(f->metadata().size(), kinds.size());
  for (size_t i = 0; i < kinds.size(); ++i) {
    EXPECT_EQ(f->metadata()[i].first, kinds[i].first);
    EXPECT_TRUE(f->metadata()[i].second == kinds[i].second)
        << kinds[i].first << ": " << f->metadata()[i].second.to_display_string() << " vs "
        << kinds[i].second.to_display_string();
  }
  ASSERT_EQ(f->tensors().size(), specs.size() + 1);
  for (size_t i = 0; i < specs.size(); ++i) {
    const TensorInfo& t = f->tensors()[i];
    EXPECT_EQ(t.name, specs[i].name);
    EXPECT_EQ(t.type, specs[i].type);
    EXPECT_EQ(t.dims, specs[i].dims);
    EXPECT_EQ(t.n_bytes, specs[i].bytes);
    EXPECT_EQ(t.offset % 32, 0u) << t.name;
    const auto expected = pattern_bytes(specs[i].bytes, static_cast<uint8_t>(i));
    EXPECT_EQ(std::memcmp(f->tensor_data(t), expected.data(), t.n_bytes), 0) << t.name;
  }
  const TensorInfo* gen = f->find_tensor("gen");
  ASSERT_NE(gen, nullptr);
  float got[4];
  std::memcpy(got, f->tensor_data(*gen), 16);
  EXPECT_EQ(got[3], 4.0f);

  // Typed access to what was written.
  EXPECT_EQ(f->get_uint("t.u8").value(), 200u);
  EXPECT_EQ(f->find("t.i8")->as_int().value(), -100);
  EXPECT_FALSE(f->find("t.i8")->as_uint().has_value());  // negative
  EXPECT_EQ(f->get_uint("t.u64").value(), std::numeric_limits<uint64_t>::max());
  EXPECT_FALSE(f->find("t.u64")->as_int().has_value());  // does not fit int64
  EXPECT_EQ(f->find("t.i64")->as_int().value(), std::numeric_limits<int64_t>::min());
  EXPECT_FLOAT_EQ(static_cast<float>(f->get_float("t.f32").value()), 1.5e-5f);
  EXPECT_EQ(f->get_float("t.i32").value(), -2000000000.0);
  EXPECT_EQ(f->get_float("t.f64").value(), -2.718281828459045);
  EXPECT_TRUE(f->get_bool("t.bool").value());
  EXPECT_EQ(f->get_string("t.string").value(), "h\xC3\xA9llo \"q\"\n");
  EXPECT_EQ(f->get_string_array("a.string").value(),
            (std::vector<std::string>{"a", "", "ccc", std::string("\0x", 2)}));
  EXPECT_EQ(f->get_float_array("a.f32").value(), (std::vector<float>{0.25f, -1.0f, 3e38f}));
  EXPECT_EQ(f->get_float_array("a.i32").value(), (std::vector<float>{-1, 2, -3}));
  EXPECT_EQ(f->get_int_array("a.i8").value(), (std::vector<int64_t>{-128, 0, 127}));
  EXPECT_EQ(f->get_int_array("a.bool").value(), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(f->get_int_array("a.i64").value(), (std::vector<int64_t>{-(1ll << 62), 9}));
  EXPECT_TRUE(f->get_string_array("a.empty")->empty());
  // A u64 above INT64_MAX does not fit get_int_array: Corrupt, naming the element.
  auto big = f->get_int_array("a.u64");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("element 0"), std::string::npos);

  const Value* nested = f->find("a.nested");
  ASSERT_EQ(nested->array_type(), ValueType::Array);
  ASSERT_EQ(nested->array_size(), 4u);
  EXPECT_EQ(nested->array_item(0)->array_int(2).value(), 3);
  EXPECT_EQ(nested->array_item(1)->array_string(1), "yz");
  EXPECT_EQ(nested->array_item(2)->array_item(0)->array_float(0).value(), 0.5);
  EXPECT_EQ(nested->array_item(3)->array_size(), 0u);
  EXPECT_EQ(nested->array_item(4), nullptr);
}

TEST(GgufWriter, WrittenFileEqualsBytesAndHonorsAlignment) {
  GgufWriter w(64);
  w.set_string("general.architecture", "test");
  w.set_u32("x", 1);
  w.set_u32("x", 2);  // replaced in place, not duplicated
  w.set_i32("y", -5);
  w.set_u64("z", 1ull << 40);
  w.set_f32_array("f", {1.0f, 2.0f});
  w.set_i32_array("i", {-1});
  w.set_string_array("s", {"p", "q"});
  ASSERT_TRUE(w.add_tensor("a", DType::F32, {3}, pattern_bytes(12, 0)).ok());
  ASSERT_TRUE(w.add_tensor("b", DType::F16, {5}, pattern_bytes(10, 1)).ok());
  const auto path = std::filesystem::temp_directory_path() /
                    ("strata_gguf_writer_" + std::to_string(::getpid()) + ".gguf");
  ASSERT_TRUE(w.write(path).ok());
  EXPECT_FALSE(std::filesystem::exists(path.string() + ".partial"));
  const auto on_disk = test::read_bytes(path);
  EXPECT_EQ(on_disk, w.to_bytes().value());
  auto f = GgufFile::open(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(f.ok()) << f.error().to_string();
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->get_uint("general.alignment").value(), 64u);
  EXPECT_EQ(f->find("general.alignment")->type(), ValueType::U32);
  EXPECT_EQ(f->get_uint("x").value(), 2u);
  EXPECT_EQ(f->metadata().size(), 8u);  // 7 set + general.alignment
  EXPECT_EQ(f->data_offset() % 64, 0u);
  EXPECT_EQ(f->find_tensor("a")->offset, 0u);
  EXPECT_EQ(f->find_tensor("b")->offset, 64u);
  EXPECT_EQ(f->get_int_array("i").value(), (std::vector<int64_t>{-1}));
}

TEST(GgufWriter, RejectsBadInput) {
  GgufWriter w;
  auto s = w.add_tensor("t", DType::F32, {4, 2}, std::vector<uint8_t>(31));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, Code::InvalidArgument);
  EXPECT_NE(s.error().message.find("tensor 't': 31 bytes"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("need 32"), std::string::npos);
  EXPECT_FALSE(w.add_tensor("q", DType::Q4_0, {16}, std::vector<uint8_t>(9)).ok());  // 16 % 32
  EXPECT_FALSE(w.add_tensor("z", DType::F32, {0}, {}).ok());
  EXPECT_FALSE(w.add_tensor("five", DType::F32, {1, 1, 1, 1, 1}, std::vector<uint8_t>(4)).ok());
  EXPECT_FALSE(w.add_tensor("", DType::F32, {1}, std::vector<uint8_t>(4)).ok());
  ASSERT_TRUE(w.add_tensor("ok", DType::F32, {1}, std::vector<uint8_t>(4)).ok());
  EXPECT_FALSE(w.add_tensor("ok", DType::F32, {1}, std::vector<uint8_t>(4)).ok());  // duplicate
  EXPECT_FALSE(w.add_tensor("huge", DType::F32, {1ull << 40, 1ull << 40}, {}).ok());
  EXPECT_EQ(w.tensor_count(), 1u);

  auto io = w.write("/nonexistent_dir_strata/x.gguf");
  ASSERT_FALSE(io.ok());
  EXPECT_EQ(io.error().code, Code::Io);
  EXPECT_NE(io.error().message.find("/nonexistent_dir_strata/x.gguf"), std::string::npos);
  EXPECT_NE(io.error().message.find("No such file"), std::string::npos);

  GgufWriter bad_align(48);
  EXPECT_EQ(bad_align.to_bytes().error().code, Code::InvalidArgument);
  GgufWriter conflict(32);
  conflict.set_u32("general.alignment", 64);
  EXPECT_FALSE(conflict.to_bytes().ok());
}

TEST(GgufWriter, CopiesKeysFromAnotherFile) {
  const auto path = test::models_dir() / "stories260K.gguf";
  if (!std::filesystem::exists(path)) GTEST_FAIL() << "missing " << path;
  auto src = GgufFile::open(path);
  ASSERT_TRUE(src.ok());
  GgufWriter w;
  for (const auto& [k, v] : src->metadata()) {
    if (k.rfind("tokenizer.", 0) == 0) w.set(k, v);
  }
  auto f = GgufFile::from_bytes(w.to_bytes().value());
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->metadata().size(), 9u);
  EXPECT_TRUE(*f->find("tokenizer.ggml.tokens") == *src->find("tokenizer.ggml.tokens"));
  EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens")->at(300),
            src->get_string_array("tokenizer.ggml.tokens")->at(300));
}

TEST(GgufReader, HandBuiltVersion2) {
  test::ByteBuilder b;
  b.header(2, 2, 3);
  b.str("general.architecture").u32(8).str("llama");
  b.str("general.alignment").u32(4).u32(16);
  b.str("v2.scores").u32(9).u32(6).u64(2).f32(0.5f).f32(-0.5f);
  b.tensor("w", {2, 2}, 0, 0).tensor("h", {4}, 1, 16);
  b.pad_to(16);
  const size_t data_start = b.bytes.size();
  for (int i = 0; i < 4; ++i) b.f32(static_cast<float>(i + 1));
  b.u32(0x3C003C00).u32(0x40004000);  // f16 1, 1, 2, 2
  auto f = GgufFile::from_bytes(b.bytes);
  ASSERT_TRUE(f.ok()) << f.error().to_string();
  EXPECT_EQ(f->version(), 2u);
  EXPECT_EQ(f->alignment(), 16u);
  EXPECT_EQ(f->data_offset(), data_start);
  EXPECT_EQ(f->architecture(), "llama");
  EXPECT_EQ(f->get_float_array("v2.scores").value(), (std::vector<float>{0.5f, -0.5f}));
  ASSERT_EQ(f->tensors().size(), 2u);
  const TensorInfo& w = f->tensors()[0];
  EXPECT_EQ(w.n_elements, 4u);
  EXPECT_EQ(w.n_bytes, 16u);
  float x[4];
  std::memcpy(x, f->tensor_data(w), 16);
  EXPECT_EQ(x[3], 4.0f);
  EXPECT_EQ(f->tensors()[1].type, DType::F16);
  EXPECT_EQ(f->tensor_data(f->tensors()[1]), f->data() + data_start + 16);
}

TEST(GgufReader, TypedGetterErrorsNameKeyAndType) {
  auto f = GgufFile::from_bytes(test::make_small_file());
  ASSERT_TRUE(f.ok()) << f.error().to_string();
  auto e = f->get_uint("general.architecture");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().code, Code::Corrupt);
  EXPECT_NE(e.error().message.find("'general.architecture'"), std::string::npos);
  EXPECT_NE(e.error().message.find("type string"), std::string::npos) << e.error().message;
  auto s = f->get_string("llama.block_count");
  EXPECT_NE(s.error().message.find("type u32"), std::string::npos) << s.error().message;
  auto a = f->get_string_array("tokenizer.ggml.scores");
  EXPECT_NE(a.error().message.find("array of f32"), std::string::npos) << a.error().message;
  EXPECT_EQ(f->get_uint("nope").error().code, Code::NotFound);
  EXPECT_NE(f->get_uint("nope").error().message.find("'nope'"), std::string::npos);
  // _or: wrong type is still an error, missing gives the fallback.
  EXPECT_FALSE(f->get_uint_or("general.architecture", 3).ok());
  EXPECT_EQ(f->get_uint_or("missing", 3).value(), 3u);
  EXPECT_FALSE(f->get_bool_or("general.architecture", true).ok());
  EXPECT_FALSE(f->get_string_or("llama.block_count", "x").ok());
  EXPECT_FALSE(f->get_float_or("general.architecture", 1.0).ok());
}

TEST(GgufValue, DisplayStrings) {
  EXPECT_EQ(Value::u32(42).to_display_string(), "42");
  EXPECT_EQ(Value::i8(-3).to_display_string(), "-3");
  EXPECT_EQ(Value::f32(1e-5f).to_display_string(), "1e-05");
  EXPECT_EQ(Value::f64(0.5).to_display_string(), "0.5");
  EXPECT_EQ(Value::boolean(false).to_display_string(), "false");
  EXPECT_EQ(Value::string("a\"b\n").to_display_string(), "\"a\\\"b\\n\"");
  EXPECT_EQ(Value::i32_array({1, 2, 3}).to_display_string(), "[1, 2, 3]");
  EXPECT_EQ(Value::i32_array({1, 2, 3, 4}).to_display_string(2), "[1, 2, ...] (4 x i32)");
  EXPECT_EQ(Value::string_array({"x", "y"}).to_display_string(), "[\"x\", \"y\"]");
  EXPECT_EQ(Value::array_of_arrays({Value::u8_array({7})}).to_display_string(), "[[7]]");
  const std::string long_string(500, 'z');
  EXPECT_LT(Value::string(long_string).to_display_string().size(), 150u);
  EXPECT_STREQ(value_type_name(ValueType::F64), "f64");
  EXPECT_STREQ(value_type_name(static_cast<ValueType>(99)), "unknown");
  // Copies of arrays share the payload and compare equal.
  const Value a = Value::string_array(std::vector<std::string>(1000, "tok"));
  const Value b = a;
  EXPECT_TRUE(a == b);
  EXPECT_EQ(b.array_string(999), "tok");
  EXPECT_FALSE(a == Value::string_array({"tok"}));
}

}  // namespace
}  // namespace strata::gguf
