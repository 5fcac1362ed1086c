// tests/engine/gguf/test_gguf_corruption.cpp — thousands of deterministic corruptions of a
// writer-made file and of stories260K.gguf: truncations, byte flips, huge values in every
// structural field. Each must open with all tensors in bounds, or fail with a useful Error.
#include <gtest/gtest.h>

#include <cstring>
#include <iostream>
#include <optional>
#include <random>

#include "engine/gguf/gguf_file.h"
#include "tests/engine/gguf/gguf_test_util.h"

namespace strata::gguf {
namespace {

using test::Field;
using test::FieldKind;

struct Tally {
  int opened = 0;
  int failed = 0;
};

// Opens bytes; on success touches everything and checks bounds, on failure checks the message.
// Returns the error message, or nullopt when the file opened.
std::optional<std::string> check_outcome(const std::vector<uint8_t>& bytes, Tally& tally,
                                         const std::string& what) {
  auto f = GgufFile::from_bytes(bytes);
  if (!f.ok()) {
    ++tally.failed;
    EXPECT_FALSE(f.error().message.empty()) << what;
    EXPECT_NE(f.error().code, Code::Ok) << what;
    EXPECT_NE(f.error().code, Code::Internal) << what << ": " << f.error().message;
    return f.error().message;
  }
  ++tally.opened;
  EXPECT_EQ(f->file_size(), bytes.size()) << what;
  EXPECT_LE(f->data_offset(), f->file_size()) << what;
  for (const auto& [key, value] : f->metadata()) {
    EXPECT_FALSE(key.empty()) << what;
    (void)value.to_display_string(4);
    EXPECT_EQ(f->find(key), &value) << what;
  }
  uint64_t checksum = 0;
  for (const TensorInfo& t : f->tensors()) {
    EXPECT_LE(t.dims.size(), 4u) << what;
    EXPECT_EQ(t.offset % f->alignment(), 0u) << what;
    const uint8_t* p = f->tensor_data(t);
    EXPECT_GE(p, f->data()) << what;
    EXPECT_LE(f->data_offset() + t.offset + t.n_bytes, f->file_size()) << what << " " << t.name;
    if (t.n_bytes) checksum += p[0] + p[t.n_bytes - 1];  // touch the first and last byte
    EXPECT_EQ(f->find_tensor(t.name), &t) << what;
  }
  (void)checksum;
  // A tensor type id this build does not read opens (so that `info` can list it) but the file cannot
  // be used: check_supported() is the rejection, and names the tensor and the id.
  if (!f->unsupported_tensors().empty()) {
    const Status s = f->check_supported();
    EXPECT_FALSE(s.ok()) << what;
    if (!s.ok()) {
      EXPECT_EQ(s.error().code, Code::Unsupported) << what;
      EXPECT_NE(s.error().message.find(f->unsupported_tensors()[0].name), std::string::npos) << what;
      return s.error().message;
    }
  }
  return std::nullopt;
}

// Values written into u64 / u32 fields: all far beyond any file here.
const uint64_t kHuge64[] = {~0ull, 1ull << 63, 1ull << 32, (1ull << 32) - 1, 1ull << 60,
                            0x7FFFFFFFFFFFFFFFull};
const uint32_t kHuge32[] = {0xFFFFFFFFu, 0x80000000u, 99u, 13u, 0x10000u};

// Every one of these values in any structural field must make the file fail: counts, lengths,
// dims and offsets that large cannot fit the file; 99, 13 (and above) are not value types, 99
// and above are not tensor types (the file opens, check_supported() rejects it), and 13 (Q5_K,
// blocks of 256) does not divide the rows here;
// none is a supported version or a dimension count <= 4.

// Expected word in the message for a failure caused by this field.
std::string expected_word(const Field& f) {
  switch (f.kind) {
    case FieldKind::Version: return "version";
    case FieldKind::TensorCount: return "tensor count";
    case FieldKind::KvCount: return "key count";
    case FieldKind::KeyLength: return "key";
    default: return f.in_tensor_info ? "tensor" : "key '";
  }
}

void run_huge_values(const std::vector<uint8_t>& base, Tally& tally, int& cases) {
  const auto fields = test::LayoutScanner(base).scan();
  ASSERT_FALSE(fields.empty());
  std::vector<uint8_t> b = base;
  auto one_case = [&](const Field& field, const void* value, const std::string& what) {
    std::memcpy(b.data() + field.pos, value, field.width);
    ++cases;
    const auto msg = check_outcome(b, tally, what);
    if (!msg) {
      ADD_FAILURE() << what << " opened, but a huge value there must be rejected";
    } else {
      EXPECT_NE(msg->find(expected_word(field)), std::string::npos) << what << ": " << *msg;
    }
    std::memcpy(b.data() + field.pos, base.data() + field.pos, field.width);  // restore
  };
  for (const Field& field : fields) {
    if (field.width == 8) {
      for (uint64_t v : kHuge64) {
        one_case(field, &v, "u64 " + std::to_string(v) + " at " + std::to_string(field.pos));
      }
    } else {
      for (uint32_t v : kHuge32) {
        one_case(field, &v, "u32 " + std::to_string(v) + " at " + std::to_string(field.pos));
      }
    }
  }
}

// Every truncation that cuts into the header, metadata, tensor infos or tensor data fails.
void run_truncations(const std::vector<uint8_t>& base, uint64_t required_end, uint64_t step,
                     Tally& tally, int& cases) {
  for (uint64_t len = 0; len < base.size(); len += (len < 4096 ? step : 997)) {
    std::vector<uint8_t> b(base.begin(), base.begin() + len);
    const std::string what = "truncated to " + std::to_string(len);
    ++cases;
    const bool opened = !check_outcome(b, tally, what).has_value();
    if (len < required_end) {
      EXPECT_FALSE(opened) << what;
    }
  }
}

void run_flips(const std::vector<uint8_t>& base, uint64_t region_end, int count, uint32_t seed,
               Tally& tally, int& cases) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<uint64_t> pos_dist(0, region_end - 1);
  std::uniform_int_distribution<int> bit_dist(0, 7);
  std::uniform_int_distribution<int> byte_dist(1, 255);
  std::vector<uint8_t> b = base;
  for (int i = 0; i < count; ++i) {
    const uint64_t pos = pos_dist(rng);
    const uint8_t mask = (i % 2) ? static_cast<uint8_t>(1u << bit_dist(rng))
                                 : static_cast<uint8_t>(byte_dist(rng));
    b[pos] ^= mask;
    ++cases;
    check_outcome(b, tally, "flip at " + std::to_string(pos) + " mask " + std::to_string(mask));
    b[pos] ^= mask;  // restore
  }
}

uint64_t end_of_tensor_data(const std::vector<uint8_t>& bytes) {
  auto f = GgufFile::from_bytes(bytes);
  EXPECT_TRUE(f.ok());
  uint64_t end = f->data_offset();
  for (const TensorInfo& t : f->tensors()) end = std::max(end, f->data_offset() + t.offset + t.n_bytes);
  return end;
}

TEST(GgufCorruption, WriterMadeFile) {
  const std::vector<uint8_t> base = test::make_small_file();
  ASSERT_TRUE(GgufFile::from_bytes(base).ok());
  Tally tally;
  int cases = 0;
  uint64_t data_offset = 0;
  test::LayoutScanner(base).scan(&data_offset);
  run_truncations(base, end_of_tensor_data(base), 1, tally, cases);
  run_flips(base, base.size(), 1500, 1234, tally, cases);
  run_flips(base, data_offset, 1500, 99, tally, cases);  // the structural part only
  run_huge_values(base, tally, cases);
  EXPECT_GE(cases, 2000);
  EXPECT_GT(tally.opened, 0);  // flips inside strings or tensor data are legitimately valid
  EXPECT_GT(tally.failed, 0);
  std::cout << "writer-made file: " << cases << " corruptions, " << tally.opened << " opened, "
            << tally.failed << " rejected\n";
}

TEST(GgufCorruption, Stories260K) {
  const auto path = test::models_dir() / "stories260K.gguf";
  if (!std::filesystem::exists(path)) GTEST_FAIL() << "missing " << path;
  const std::vector<uint8_t> base = test::read_bytes(path);
  Tally tally;
  int cases = 0;
  uint64_t data_offset = 0;
  test::LayoutScanner(base).scan(&data_offset);
  ASSERT_EQ(data_offset, 14272u);
  run_truncations(base, end_of_tensor_data(base), 7, tally, cases);
  run_flips(base, data_offset, 1200, 42, tally, cases);
  run_huge_values(base, tally, cases);
  EXPECT_GE(cases, 2000);
  EXPECT_GT(tally.failed, 0);
  std::cout << "stories260K: " << cases << " corruptions, " << tally.opened << " opened, "
            << tally.failed << " rejected\n";
}

}  // namespace
}  // namespace strata::gguf
