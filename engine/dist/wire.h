// engine/dist/wire.h — the byte layout of messages between ranks: little-endian plain values,
// strings and vectors as a u64 count then the elements. The reader checks every length against
// the bytes left (Corrupt otherwise), so a garbled message is an error, never a wild read.
// Both ends are the same build on the same kind of machine (x86-64), so values are copied as is.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/core/status.h"

namespace strata::dist {

class WireWriter {
 public:
  template <typename T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    append(&v, sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    append(s.data(), s.size());
  }
  template <typename T>
  void put_vector(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    put<uint64_t>(v.size());
    append(v.data(), v.size() * sizeof(T));
  }
  // Bytes of another writer, as they are (no count).
  void put_raw(const std::vector<uint8_t>& bytes) { append(bytes.data(), bytes.size()); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  void append(const void* p, size_t n) {
    if (n == 0) return;
    const size_t at = bytes_.size();
    bytes_.resize(at + n);
    std::memcpy(bytes_.data() + at, p, n);
  }
  std::vector<uint8_t> bytes_;
};

class WireReader {
 public:
  explicit WireReader(const std::vector<uint8_t>& bytes) : bytes_(bytes) {}
  template <typename T>
  Expected<T> get() {
    static_assert(std::is_trivially_copyable_v<T>);
    if (left() < sizeof(T)) return short_read(sizeof(T));
    T v;
    std::memcpy(&v, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  Expected<std::string> get_string() {
    STRATA_ASSIGN_OR_RETURN(uint64_t n, get<uint64_t>());
    if (left() < n) return short_read(n);
    std::string s(reinterpret_cast<const char*>(bytes_.data() + at_), static_cast<size_t>(n));
    at_ += static_cast<size_t>(n);
    return s;
  }
  template <typename T>
  Expected<std::vector<T>> get_vector() {
    STRATA_ASSIGN_OR_RETURN(uint64_t n, get<uint64_t>());
    if (n > left() / sizeof(T)) return short_read(n * sizeof(T));
    std::vector<T> v(static_cast<size_t>(n));
    std::memcpy(v.data(), bytes_.data() + at_, static_cast<size_t>(n) * sizeof(T));
    at_ += static_cast<size_t>(n) * sizeof(T);
    return v;
  }
  size_t left() const { return bytes_.size() - at_; }

 private:
  Error short_read(uint64_t want) const {
    return Error{Code::Corrupt, "rank message: " + std::to_string(want) + " bytes wanted at offset " +
                                    std::to_string(at_) + " of " + std::to_string(bytes_.size())};
  }
  const std::vector<uint8_t>& bytes_;
  size_t at_ = 0;
};

}  // namespace strata::dist
