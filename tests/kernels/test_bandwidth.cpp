// tests/kernels/test_bandwidth.cpp — the read-bandwidth probe's readers (kernels/cpu/bandwidth.h) each
// read every byte of their range exactly once: their byte sums equal the scalar sum, for sizes that
// do and do not split into four equal streams. (Their speed is a benchmark's business, not a test's.)
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "kernels/cpu/bandwidth.h"

namespace strata::kernels {
namespace {

TEST(ReadBandwidthProbe, EveryReaderReadsEveryByteOnce) {
  constexpr int64_t kMax = 64 * 1024 + 768;
  std::unique_ptr<uint8_t[]> raw(new uint8_t[kMax + 64 + 1024]);
  uint8_t* p = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw.get()) + 63) & ~uintptr_t{63});
  for (int64_t i = 0; i < kMax + 1024; ++i) p[i] = static_cast<uint8_t>((i * 7 + i / 251) & 0xFF);
  std::set<std::string> names;
  for (int r = 0; r < kReadBandwidthReaders; ++r) {
    names.insert(read_probe_name(r));
    // 256 (one line per stream), 64 KiB (four equal streams), 64 KiB + 768 (three lines left over).
    for (int64_t bytes : {int64_t{256}, int64_t{4096}, int64_t{64} * 1024, kMax}) {
      uint64_t want = 0;
      for (int64_t i = 0; i < bytes; ++i) want += p[i];
      EXPECT_EQ(read_probe_sum(r, p, bytes), want) << read_probe_name(r) << ", " << bytes << " bytes";
    }
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(kReadBandwidthReaders));
  EXPECT_EQ(read_probe_sum(0, p, 100), 0u);   // not a multiple of 256
  EXPECT_EQ(read_probe_sum(kReadBandwidthReaders, p, 256), 0u);
  EXPECT_STREQ(read_probe_name(-1), "?");
}

}  // namespace
}  // namespace strata::kernels
