// engine/gguf/gguf_file.cpp — GgufFile: the mapping (mmap or bytes) and the typed getters.
// Parsing lives in gguf_parser.cpp. Depends on status.h, gguf_types.h, POSIX mmap.
#include "engine/gguf/gguf_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <map>
#include <string>

#include "engine/gguf/gguf_parser.h"

namespace strata::gguf {

// Either a read-only private mapping of a whole file or an owned byte vector. The address of the
// bytes never changes, so moving a GgufFile keeps tensor_data() pointers valid.
struct GgufFile::Backing {
  const uint8_t* data = nullptr;
  uint64_t size = 0;
  void* map = nullptr;  // non-null when mmapped
  std::vector<uint8_t> bytes;

  Backing() = default;
  Backing(const Backing&) = delete;
  Backing& operator=(const Backing&) = delete;
  ~Backing() {
    if (map) munmap(map, size);
  }
};

GgufFile::GgufFile() = default;
GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

namespace {

std::string errno_text(int err) { return std::strerror(err); }

// 'path' with quotes (a helper, also to sidestep a GCC 12 -Wrestrict false positive on
// "'" + std::string).
std::string quoted(const std::filesystem::path& path) {
  std::string s;
  s += '\'';
  s += path.string();
  s += '\'';
  return s;
}

// Closes a file descriptor on every return path.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Expected<GgufFile> GgufFile::parse(std::unique_ptr<Backing> backing, std::filesystem::path path) {
  GgufFile file;
  const uint8_t* data = backing->data;
  const uint64_t size = backing->size;
  file.backing_ = std::move(backing);
  file.path_ = std::move(path);
  Parser parser(data, size, file);
  Status s = parser.run();
  if (!s.ok()) {
    Error e = s.error();
    if (!file.path_.empty()) e.message = file.path_.string() + ": " + e.message;
    return e;
  }
  return file;
}

Expected<GgufFile> GgufFile::open(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return make_error(err == ENOENT ? Code::NotFound : Code::Io,
                      "cannot open " + quoted(path) + ": " + errno_text(err));
  }
  FdGuard guard{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    return make_error(Code::Io, "cannot stat " + quoted(path) + ": " + errno_text(err));
  }
  if (!S_ISREG(st.st_mode)) {
    return make_error(Code::Io, quoted(path) + " is not a regular file");
  }
  auto backing = std::make_unique<Backing>();
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > 0) {
    if (size > std::numeric_limits<size_t>::max()) {
      return make_error(Code::Io, quoted(path) + " of " + std::to_string(size) +
                                      " bytes is too large to map");
    }
    void* map = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      const int err = errno;
      return make_error(err == ENOMEM ? Code::OutOfMemory : Code::Io,
                        "cannot map " + quoted(path) + " (" + std::to_string(size) +
                            " bytes): " + errno_text(err));
    }
    backing->map = map;
    backing->data = static_cast<const uint8_t*>(map);
    backing->size = size;
  }
  return parse(std::move(backing), path);
}

Expected<GgufFile> GgufFile::from_bytes(std::vector<uint8_t> bytes) {
  auto backing = std::make_unique<Backing>();
  backing->bytes = std::move(bytes);
  backing->data = backing->bytes.data();
  backing->size = backing->bytes.size();
  return parse(std::move(backing), {});
}

const uint8_t* GgufFile::data() const { return backing_ ? backing_->data : nullptr; }

const Value* GgufFile::find(std::string_view key) const {
  auto it = key_index_.find(key);
  return it == key_index_.end() ? nullptr : &metadata_[it->second].second;
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Status GgufFile::check_supported() const {
  if (unsupported_.empty()) return {};
  // One line per type: "IQ9_Z (type 99) in 'blk.0.attn_q.weight', 'blk.1...' and 10 more".
  std::map<uint32_t, std::vector<const UnsupportedTensor*>> by_type;
  for (const UnsupportedTensor& u : unsupported_) by_type[u.raw_type].push_back(&u);
  std::string msg;
  for (const auto& [id, list] : by_type) {
    const char* name = kernels::ggml_type_name_unhandled(id);
    msg += msg.empty() ? "" : "; ";
    msg += name ? std::string(name) + " (type " + std::to_string(id) + ") is not supported"
                : "unknown tensor type id " + std::to_string(id) + " (no ggml type has it)";
    msg += ": " + std::to_string(list.size()) + (list.size() == 1 ? " tensor, " : " tensors, ");
    for (size_t i = 0; i < list.size() && i < 3; ++i) msg += (i ? ", '" : "'") + list[i]->name + "'";
    if (list.size() > 3) msg += " and " + std::to_string(list.size() - 3) + " more";
  }
  return Error{Code::Unsupported, msg + "; this build reads " + kernels::weight_type_names()};
}

const uint8_t* GgufFile::tensor_data(const TensorInfo& t) const {
  if (!backing_ || !backing_->data) return nullptr;
  return backing_->data + data_offset_ + t.offset;
}

std::string GgufFile::architecture() const {
  const Value* v = find("general.architecture");
  const std::string* s = v ? v->as_string() : nullptr;
  return s ? *s : std::string();
}

// ---- typed getters ---------------------------------------------------------------------------

namespace {

Error missing(std::string_view key) {
  return make_error(Code::NotFound, "key '" + std::string(key) + "' not found");
}

Error wrong_type(std::string_view key, const Value& v, const char* expected) {
  std::string actual = value_type_name(v.type());
  if (v.is_array()) actual += std::string(" of ") + value_type_name(v.array_type());
  return make_error(Code::Corrupt, "key '" + std::string(key) + "' has type " + actual +
                                       " (value " + v.to_display_string(4) + "), expected " +
                                       expected);
}

Error wrong_element(std::string_view key, const Value& v, uint64_t i, const char* expected) {
  std::string shown;
  if (auto e = v.element(i)) shown = e->to_display_string(4);
  return make_error(Code::Corrupt, "key '" + std::string(key) + "': element " + std::to_string(i) +
                                       " (" + shown + ") is not " + expected);
}

}  // namespace

Expected<std::string> GgufFile::get_string(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(key);
  if (const std::string* s = v->as_string()) return *s;
  return wrong_type(key, *v, "string");
}

Expected<uint64_t> GgufFile::get_uint(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(key);
  if (auto u = v->as_uint()) return *u;
  return wrong_type(key, *v, "a non-negative integer");
}

Expected<double> GgufFile::get_float(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(key);
  if (auto f = v->as_float()) return *f;
  return wrong_type(key, *v, "a number");
}

Expected<bool> GgufFile::get_bool(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(key);
  if (auto b = v->as_bool()) return *b;
  return wrong_type(key, *v, "bool");
}

Expected<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(key);
  if (!v->is_array() || v->array_type() != ValueType::String) {
    return wrong_type(key, *v, "array of string");
  }
  std::vector<std::string> out;
  out.reserve(v->array_size());
  for (uint64_t i = 0; i < v->array_size(); ++i) out.emplace_back(v->array_string(i));
  return out;
}

Expected<std::vector<float>> GgufFile::get_float_array(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(key);
  const ValueType e = v->array_type();
  if (!v->is_array() || !(e == ValueType::F32 || e == ValueType::F64 || is_integer_type(e))) {
    return wrong_type(key, *v, "array of numbers");
  }
  std::vector<float> out(v->array_size());
  if (e == ValueType::F32) {
    if (!out.empty()) std::memcpy(out.data(), v->array_raw()->data(), out.size() * sizeof(float));
    return out;
  }
  for (uint64_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(*v->array_float(i));
  return out;
}

Expected<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(key);
  const ValueType e = v->array_type();
  if (!v->is_array() || !(is_integer_type(e) || e == ValueType::Bool)) {
    return wrong_type(key, *v, "array of integers");
  }
  std::vector<int64_t> out(v->array_size());
  for (uint64_t i = 0; i < out.size(); ++i) {
    auto x = v->array_int(i);
    if (!x) return wrong_element(key, *v, i, "an integer that fits in int64");
    out[i] = *x;
  }
  return out;
}

Expected<uint64_t> GgufFile::get_uint_or(std::string_view key, uint64_t fallback) const {
  if (!find(key)) return fallback;
  return get_uint(key);
}

Expected<double> GgufFile::get_float_or(std::string_view key, double fallback) const {
  if (!find(key)) return fallback;
  return get_float(key);
}

Expected<bool> GgufFile::get_bool_or(std::string_view key, bool fallback) const {
  if (!find(key)) return fallback;
  return get_bool(key);
}

Expected<std::string> GgufFile::get_string_or(std::string_view key, std::string fallback) const {
  if (!find(key)) return fallback;
  return get_string(key);
}

}  // namespace strata::gguf
