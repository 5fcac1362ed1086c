// tests/engine/gguf/test_gguf_errors.cpp — specific malformed files and the exact errors they
// give: codes, and messages that name the key / tensor and the numbers.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>

#include "engine/gguf/gguf_file.h"
#include "tests/engine/gguf/gguf_test_util.h"

namespace strata::gguf {
namespace {

using test::ByteBuilder;
using test::Field;
using test::FieldKind;

Error parse_error(const std::vector<uint8_t>& bytes) {
  auto f = GgufFile::from_bytes(bytes);
  EXPECT_FALSE(f.ok());
  if (f.ok()) return Error{Code::Ok, ""};
  return f.error();
}

void expect_contains(const Error& e, const std::string& part) {
  EXPECT_NE(e.message.find(part), std::string::npos) << "message: " << e.message
                                                     << "\nexpected to contain: " << part;
}

const Field& nth_field(const std::vector<Field>& fields, FieldKind kind, int n) {
  for (const Field& f : fields) {
    if (f.kind == kind && n-- == 0) return f;
  }
  ADD_FAILURE() << "field not found";
  return fields.front();
}

template <typename T>
void poke(std::vector<uint8_t>& b, uint64_t pos, T v) {
  std::memcpy(b.data() + pos, &v, sizeof(T));
}

TEST(GgufErrors, EmptyAndShortFiles) {
  Error e = parse_error({});
  EXPECT_EQ(e.code, Code::Corrupt);
  expect_contains(e, "empty");
  e = parse_error({'G', 'G'});
  expect_contains(e, "2 bytes");
  e = parse_error({'G', 'G', 'U', 'F', 3, 0});
  expect_contains(e, "version");
  expect_contains(e, "past the end");
}

TEST(GgufErrors, WrongMagic) {
  std::vector<uint8_t> b = test::make_small_file();
  std::memcpy(b.data(), "GGML", 4);
  Error e = parse_error(b);
  EXPECT_EQ(e.code, Code::Corrupt);
  expect_contains(e, "expected magic GGUF");
  expect_contains(e, "found 0x47474D4C");
}

TEST(GgufErrors, Versions) {
  ByteBuilder v1;
  v1.raw("GGUF", 4).u32(1).u32(0).u32(0);
  Error e = parse_error(v1.bytes);
  EXPECT_EQ(e.code, Code::Unsupported);
  expect_contains(e, "version 1");
  ByteBuilder v4;
  v4.header(4, 0, 0);
  e = parse_error(v4.bytes);
  EXPECT_EQ(e.code, Code::Unsupported);
  expect_contains(e, "version 4");
  ByteBuilder be;
  be.raw("GGUF", 4).u32(0x03000000).u64(0).u64(0);
  expect_contains(parse_error(be.bytes), "big-endian");
  ByteBuilder empty_v3;  // a header alone, no keys, no tensors: valid
  empty_v3.header(3, 0, 0);
  auto f = GgufFile::from_bytes(empty_v3.bytes);
  ASSERT_TRUE(f.ok()) << f.error().to_string();
  EXPECT_EQ(f->tensors().size(), 0u);
}

TEST(GgufErrors, TruncatedFile) {
  const std::vector<uint8_t> full = test::make_small_file();
  uint64_t data_offset = 0;
  const auto fields = test::LayoutScanner(full).scan(&data_offset);
  // Cut inside the last key's name ("test.nested", key #6).
  const Field& key6 = nth_field(fields, FieldKind::KeyLength, 6);
  std::vector<uint8_t> cut(full.begin(), full.begin() + key6.pos + 10);
  Error e = parse_error(cut);
  EXPECT_EQ(e.code, Code::Corrupt);
  expect_contains(e, "key #6 at offset " + std::to_string(key6.pos) + ": key length 11");
  expect_contains(e, "exceeds file size " + std::to_string(cut.size()));
  // Cut inside the token list: the message names the key and the element.
  const Field& tok5 = nth_field(fields, FieldKind::StringLength, 6);  // 1 string key + 5 tokens
  cut.assign(full.begin(), full.begin() + tok5.pos + 10);
  e = parse_error(cut);
  expect_contains(e, "key 'tokenizer.ggml.tokens': string 5 of 6: length 6 at offset " +
                         std::to_string(tok5.pos));
  // A header that promises more keys than the file can hold fails before reading them.
  cut.assign(full.begin(), full.begin() + 60);
  expect_contains(parse_error(cut), "metadata key count 7 needs at least 14 bytes per key");
  // Cut inside the tensor infos.
  const Field& dim = nth_field(fields, FieldKind::Dim, 1);
  cut.assign(full.begin(), full.begin() + dim.pos + 3);
  e = parse_error(cut);
  expect_contains(e, "tensor 'a.weight'");
  expect_contains(e, "past the end of the file (size " + std::to_string(cut.size()) + ")");
}

TEST(GgufErrors, TensorPastTheEnd) {
  std::vector<uint8_t> b = test::make_small_file();
  auto f = GgufFile::from_bytes(b);
  ASSERT_TRUE(f.ok());
  const TensorInfo c = *f->find_tensor("c.weight");
  const uint64_t start = f->data_offset() + c.offset;
  b.resize(start + c.n_bytes - 1);
  Error e = parse_error(b);
  EXPECT_EQ(e.code, Code::Corrupt);
  expect_contains(e, "tensor 'c.weight': data [" + std::to_string(start) + ", +136) ends past file size " +
                         std::to_string(b.size()));
}

TEST(GgufErrors, UnknownTensorType) {
  std::vector<uint8_t> b = test::make_small_file();
  const auto fields = test::LayoutScanner(b).scan();
  const Field& type = nth_field(fields, FieldKind::TensorType, 1);  // b.weight
  poke<uint32_t>(b, type.pos, 99);
  // The file opens (so `info` can list it); the tensor is kept aside and check_supported() names it,
  // its id and the types this build reads.
  auto f = GgufFile::from_bytes(b);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->find_tensor("b.weight"), nullptr);
  ASSERT_EQ(f->unsupported_tensors().size(), 1u);
  EXPECT_EQ(f->unsupported_tensors()[0].name, "b.weight");
  EXPECT_EQ(f->unsupported_tensors()[0].raw_type, 99u);
  Status s = f->check_supported();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, Code::Unsupported);
  expect_contains(s.error(), "unknown tensor type id 99 (no ggml type has it): 1 tensor, 'b.weight'");
  expect_contains(s.error(), "this build reads f32 f16 q4_0");
  expect_contains(s.error(), "iq4_xs");
  // A type ggml defines that this build does not read is named.
  poke<uint32_t>(b, type.pos, 40);
  auto g = GgufFile::from_bytes(b);
  ASSERT_TRUE(g.ok());
  expect_contains(g->check_supported().error(), "NVFP4 (type 40) is not supported: 1 tensor, 'b.weight'");
  // A type this build reads is parsed as such: IQ4_NL (id 20) has 32-element blocks, which b.weight's
  // row of 8 is not a multiple of.
  poke<uint32_t>(b, type.pos, 20);
  expect_contains(parse_error(b), "row of 8 elements is not a multiple of the iq4_nl block size 32");
}

TEST(GgufErrors, HugeCountsFailFastWithoutAllocating) {
  // 2^60 strings in a file of about 1 KiB.
  ByteBuilder b;
  b.header(3, 0, 1).str("tokenizer.ggml.tokens").u32(9).u32(8).u64(1ull << 60);
  for (int i = 0; i < 100; ++i) b.str("tok");
  const auto t0 = std::chrono::steady_clock::now();
  Error e = parse_error(b.bytes);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  // Reading 100 short strings takes microseconds; 1 s is reached only by a parser that walks or
  // allocates for the 2^60 elements the header claims, whatever the load.
  EXPECT_LT(ms, 1000.0);
  EXPECT_EQ(e.code, Code::Corrupt);
  expect_contains(e, "key 'tokenizer.ggml.tokens': array of 1152921504606846976 string elements");
  expect_contains(e, "at least 8 bytes each");

  ByteBuilder kv;
  kv.header(3, 0, 1ull << 62);
  expect_contains(parse_error(kv.bytes), "metadata key count 4611686018427387904");
  ByteBuilder tc;
  tc.header(3, ~0ull, 0);
  expect_contains(parse_error(tc.bytes), "tensor count 18446744073709551615");

  ByteBuilder len;
  len.header(3, 0, 1).str("k").u32(8).u64(~0ull).raw("abc", 3);
  e = parse_error(len.bytes);
  expect_contains(e, "key 'k': string length 18446744073709551615 at offset 37 exceeds file size 48");
}

TEST(GgufErrors, DimensionChecks) {
  auto tensor_file = [](const std::vector<uint64_t>& dims, uint32_t type, uint64_t offset) {
    ByteBuilder b;
    b.header(3, 1, 0).tensor("blk.0.w", dims, type, offset).pad_to(32);
    b.bytes.resize(b.bytes.size() + 64);
    return b.bytes;
  };
  EXPECT_TRUE(GgufFile::from_bytes(tensor_file({4, 4}, 0, 0)).ok());
  Error e = parse_error(tensor_file({4, 4, 1, 1, 1}, 0, 0));
  expect_contains(e, "tensor 'blk.0.w': 5 dimensions");
  e = parse_error(tensor_file({1ull << 32, 1ull << 32}, 0, 0));
  expect_contains(e, "tensor 'blk.0.w': dims [4294967296, 4294967296] have more than 2^63-1 elements");
  e = parse_error(tensor_file({4, 0}, 0, 0));
  expect_contains(e, "dimension 1 is 0");
  e = parse_error(tensor_file({48, 1}, 8, 0));  // Q8_0 needs a multiple of 32
  expect_contains(e, "row of 48 elements is not a multiple of the q8_0 block size 32");
  e = parse_error(tensor_file({4}, 0, 8));
  expect_contains(e, "tensor 'blk.0.w': data offset 8 is not a multiple of the alignment 32");
  e = parse_error(tensor_file({4}, 0, 1ull << 63));
  expect_contains(e, "data offset 9223372036854775808");
  expect_contains(e, "lies past file size");
  e = parse_error(tensor_file({1ull << 40}, 0, 0));
  expect_contains(e, "ends past file size");
}

TEST(GgufErrors, DuplicatesAndAlignment) {
  ByteBuilder dk;
  dk.header(3, 0, 2).str("a.b").u32(4).u32(1).str("a.b").u32(4).u32(2);
  Error e = parse_error(dk.bytes);
  EXPECT_EQ(e.code, Code::Corrupt);
  expect_contains(e, "duplicate key 'a.b' (entries #0 and #1)");

  ByteBuilder dt;
  dt.header(3, 2, 0).tensor("t", {8}, 0, 0).tensor("t", {8}, 0, 32).pad_to(32);
  dt.bytes.resize(dt.bytes.size() + 64);
  expect_contains(parse_error(dt.bytes), "duplicate tensor name 't' (tensors #0 and #1)");

  for (uint32_t bad : {0u, 3u, 48u}) {
    ByteBuilder al;
    al.header(3, 0, 1).str("general.alignment").u32(4).u32(bad);
    e = parse_error(al.bytes);
    expect_contains(e, "key 'general.alignment': " + std::to_string(bad) +
                           " is not a non-zero power of two");
  }
  ByteBuilder as;
  as.header(3, 0, 1).str("general.alignment").u32(8).str("32");
  expect_contains(parse_error(as.bytes), "'general.alignment' has type string");

  ByteBuilder vt;
  vt.header(3, 0, 1).str("k").u32(13).u32(0);
  expect_contains(parse_error(vt.bytes), "key 'k': value type 13 at offset 33 is not a GGUF value type");
  ByteBuilder at;
  at.header(3, 0, 1).str("k").u32(9).u32(77).u64(0);
  expect_contains(parse_error(at.bytes), "key 'k': array element type 77");
}

TEST(GgufErrors, DeeplyNestedArraysAreRejected) {
  ByteBuilder b;
  b.header(3, 0, 1).str("deep").u32(9);
  for (int i = 0; i < 1000; ++i) b.u32(9).u64(1);
  b.u32(0).u64(0);
  Error e = parse_error(b.bytes);
  expect_contains(e, "key 'deep'");
  expect_contains(e, "nested deeper than 16");
}

}  // namespace
}  // namespace strata::gguf
