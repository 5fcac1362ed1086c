// engine/gguf/gguf_writer.cpp — GGUF v3 serialization to a file or a byte vector.
// Depends on status.h, gguf_types.h, kernels/cpu/dtype.h and the C stdio library.
#include "engine/gguf/gguf_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>

namespace strata::gguf {
namespace {

std::string n(uint64_t v) { return std::to_string(v); }

std::string dims_string(const std::vector<uint64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + n(dims[i]);
  return s + "]";
}

}  // namespace

namespace detail {

// Where serialized bytes go: a vector or a stdio file. Tracks the byte position for padding.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  Status put(const void* p, uint64_t len) {
    if (len == 0) return {};
    STRATA_RETURN_IF_ERROR(write_bytes(p, len));
    pos_ += len;
    return {};
  }
  template <typename T>
  Status put_scalar(T v) {
    return put(&v, sizeof(T));
  }
  Status put_string(std::string_view s) {
    STRATA_RETURN_IF_ERROR(put_scalar<uint64_t>(s.size()));
    return put(s.data(), s.size());
  }
  Status pad_to(uint64_t alignment) {
    static const uint8_t kZeros[256] = {};
    uint64_t pad = (alignment - pos_ % alignment) % alignment;
    while (pad > 0) {
      const uint64_t chunk = pad < sizeof(kZeros) ? pad : sizeof(kZeros);
      STRATA_RETURN_IF_ERROR(put(kZeros, chunk));
      pad -= chunk;
    }
    return {};
  }
  uint64_t pos() const { return pos_; }

 protected:
  virtual Status write_bytes(const void* p, uint64_t len) = 0;

 private:
  uint64_t pos_ = 0;
};

}  // namespace detail

namespace {

class VectorSink final : public detail::ByteSink {
 public:
  std::vector<uint8_t> bytes;

 protected:
  Status write_bytes(const void* p, uint64_t len) override {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    bytes.insert(bytes.end(), b, b + len);
    return {};
  }
};

class FileSink final : public detail::ByteSink {
 public:
  FileSink(std::FILE* f, std::string path) : f_(f), path_(std::move(path)) {}

 protected:
  Status write_bytes(const void* p, uint64_t len) override {
    if (std::fwrite(p, 1, len, f_) != len) {
      const int err = errno;
      return make_error(Code::Io, "cannot write " + n(len) + " bytes at offset " + n(pos()) +
                                      " of '" + path_ + "': " + std::strerror(err));
    }
    return {};
  }

 private:
  std::FILE* f_;
  std::string path_;
};

Status put_value(detail::ByteSink& sink, const Value& v);

Status put_array_body(detail::ByteSink& sink, const Value& v) {
  const ValueType elem = v.array_type();
  STRATA_RETURN_IF_ERROR(sink.put_scalar<uint32_t>(static_cast<uint32_t>(elem)));
  STRATA_RETURN_IF_ERROR(sink.put_scalar<uint64_t>(v.array_size()));
  if (elem == ValueType::String) {
    for (uint64_t i = 0; i < v.array_size(); ++i) STRATA_RETURN_IF_ERROR(sink.put_string(v.array_string(i)));
    return {};
  }
  if (elem == ValueType::Array) {
    for (uint64_t i = 0; i < v.array_size(); ++i) {
      const Value* item = v.array_item(i);
      if (!item) return make_error(Code::Internal, "nested array item missing");
      STRATA_RETURN_IF_ERROR(put_array_body(sink, *item));
    }
    return {};
  }
  const std::vector<uint8_t>* raw = v.array_raw();
  if (!raw) return make_error(Code::Internal, "numeric array without bytes");
  return sink.put(raw->data(), raw->size());
}

// The value's bytes (without its type id).
Status put_value(detail::ByteSink& sink, const Value& v) {
  switch (v.type()) {
    case ValueType::U8: return sink.put_scalar<uint8_t>(static_cast<uint8_t>(*v.as_uint()));
    case ValueType::I8: return sink.put_scalar<int8_t>(static_cast<int8_t>(*v.as_int()));
    case ValueType::U16: return sink.put_scalar<uint16_t>(static_cast<uint16_t>(*v.as_uint()));
    case ValueType::I16: return sink.put_scalar<int16_t>(static_cast<int16_t>(*v.as_int()));
    case ValueType::U32: return sink.put_scalar<uint32_t>(static_cast<uint32_t>(*v.as_uint()));
    case ValueType::I32: return sink.put_scalar<int32_t>(static_cast<int32_t>(*v.as_int()));
    case ValueType::U64: return sink.put_scalar<uint64_t>(*v.as_uint());
    case ValueType::I64: return sink.put_scalar<int64_t>(*v.as_int());
    case ValueType::F32: return sink.put_scalar<float>(static_cast<float>(*v.as_float()));
    case ValueType::F64: return sink.put_scalar<double>(*v.as_float());
    case ValueType::Bool: return sink.put_scalar<uint8_t>(*v.as_bool() ? 1 : 0);
    case ValueType::String: return sink.put_string(*v.as_string());
    case ValueType::Array: return put_array_body(sink, v);
  }
  return make_error(Code::Internal, "unknown value type");
}

}  // namespace

GgufWriter::GgufWriter(uint64_t alignment) : alignment_(alignment) {}

void GgufWriter::set(std::string key, Value v) {
  for (auto& [k, value] : metadata_) {
    if (k == key) {
      value = std::move(v);
      return;
    }
  }
  metadata_.emplace_back(std::move(key), std::move(v));
}

bool GgufWriter::remove(std::string_view key) {
  for (auto it = metadata_.begin(); it != metadata_.end(); ++it) {
    if (it->first == key) {
      metadata_.erase(it);
      return true;
    }
  }
  return false;
}

Expected<uint64_t> GgufWriter::tensor_bytes(const std::string& name, kernels::DType type,
                                            const std::vector<uint64_t>& dims) const {
  const std::string where = "tensor '" + name + "': ";
  if (name.empty()) return make_error(Code::InvalidArgument, "tensor name is empty");
  if (name.size() > kMaxKeyBytes) {
    return make_error(Code::InvalidArgument, "tensor name of " + n(name.size()) + " bytes is too long");
  }
  for (const PendingTensor& t : tensors_) {
    if (t.name == name) return make_error(Code::InvalidArgument, where + "name already added");
  }
  const kernels::DTypeTraits* traits = kernels::dtype_traits(static_cast<uint32_t>(type));
  if (!traits) {
    return make_error(Code::InvalidArgument,
                      where + "unknown type id " + n(static_cast<uint32_t>(type)));
  }
  if (dims.empty() || dims.size() > kMaxDims) {
    return make_error(Code::InvalidArgument, where + n(dims.size()) + " dimensions, expected 1 to 4");
  }
  uint64_t elements = 1;
  for (uint64_t d : dims) {
    if (d == 0 || d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / elements) {
      return make_error(Code::InvalidArgument, where + "dims " + dims_string(dims) +
                                                   " have a zero or overflow the element count");
    }
    elements *= d;
  }
  const uint64_t block = static_cast<uint64_t>(traits->block_elems);
  if (dims[0] % block != 0) {
    return make_error(Code::InvalidArgument, where + "row of " + n(dims[0]) +
                                                 " elements is not a multiple of the " +
                                                 traits->name + " block size " + n(block));
  }
  const uint64_t blocks = elements / block;
  const uint64_t block_bytes = static_cast<uint64_t>(traits->block_bytes);
  if (blocks > std::numeric_limits<uint64_t>::max() / block_bytes) {
    return make_error(Code::InvalidArgument, where + "size overflows 64 bits");
  }
  return blocks * block_bytes;
}

Status GgufWriter::add(PendingTensor t) {
  const uint64_t align = alignment_ == 0 ? 1 : alignment_;
  const uint64_t offset = (data_end_ + align - 1) / align * align;
  if (offset < data_end_ || t.n_bytes > std::numeric_limits<uint64_t>::max() - offset) {
    return make_error(Code::InvalidArgument, "tensor '" + t.name + "': data section overflows 64 bits");
  }
  t.offset = offset;
  data_end_ = offset + t.n_bytes;
  tensors_.push_back(std::move(t));
  return {};
}

Status GgufWriter::add_tensor(std::string name, kernels::DType type, std::vector<uint64_t> dims,
                              std::vector<uint8_t> data) {
  STRATA_ASSIGN_OR_RETURN(const uint64_t bytes, tensor_bytes(name, type, dims));
  if (data.size() != bytes) {
    return make_error(Code::InvalidArgument, "tensor '" + name + "': " + n(data.size()) +
                                                 " bytes of data, but dims " + dims_string(dims) +
                                                 " of " + kernels::dtype_name(type) + " need " +
                                                 n(bytes));
  }
  PendingTensor t{std::move(name), type, std::move(dims), bytes, 0, std::move(data), {}};
  return add(std::move(t));
}

Status GgufWriter::add_tensor_generated(std::string name, kernels::DType type,
                                        std::vector<uint64_t> dims, FillFn fill) {
  STRATA_ASSIGN_OR_RETURN(const uint64_t bytes, tensor_bytes(name, type, dims));
  if (!fill) return make_error(Code::InvalidArgument, "tensor '" + name + "': no fill function");
  PendingTensor t{std::move(name), type, std::move(dims), bytes, 0, {}, std::move(fill)};
  return add(std::move(t));
}

Status GgufWriter::check() const {
  if (alignment_ == 0 || (alignment_ & (alignment_ - 1)) != 0 ||
      alignment_ > std::numeric_limits<uint32_t>::max()) {
    return make_error(Code::InvalidArgument, "alignment " + n(alignment_) +
                                                 " is not a power of two that fits in a u32");
  }
  for (const auto& [key, value] : metadata_) {
    if (key.empty()) return make_error(Code::InvalidArgument, "empty metadata key");
    if (key.size() > kMaxKeyBytes) {
      return make_error(Code::InvalidArgument, "metadata key of " + n(key.size()) + " bytes is too long");
    }
    if (key == "general.alignment") {
      auto a = value.as_uint();
      if (!a || *a != alignment_) {
        return make_error(Code::InvalidArgument, "key 'general.alignment' is " +
                                                     value.to_display_string() +
                                                     " but the writer aligns to " + n(alignment_));
      }
    }
  }
  return {};
}

Status GgufWriter::emit(detail::ByteSink& sink) const {
  bool has_alignment_key = false;
  for (const auto& kv : metadata_) has_alignment_key |= kv.first == "general.alignment";
  const bool add_alignment_key = !has_alignment_key && alignment_ != kDefaultAlignment;

  STRATA_RETURN_IF_ERROR(sink.put("GGUF", 4));
  STRATA_RETURN_IF_ERROR(sink.put_scalar<uint32_t>(3));
  STRATA_RETURN_IF_ERROR(sink.put_scalar<uint64_t>(tensors_.size()));
  STRATA_RETURN_IF_ERROR(sink.put_scalar<uint64_t>(metadata_.size() + (add_alignment_key ? 1 : 0)));
  if (add_alignment_key) {
    STRATA_RETURN_IF_ERROR(sink.put_string("general.alignment"));
    STRATA_RETURN_IF_ERROR(sink.put_scalar<uint32_t>(static_cast<uint32_t>(ValueType::U32)));
    STRATA_RETURN_IF_ERROR(sink.put_scalar<uint32_t>(static_cast<uint32_t>(alignment_)));
  }
  for (const auto& [key, value] : metadata_) {
    STRATA_RETURN_IF_ERROR(sink.put_string(key));
    STRATA_RETURN_IF_ERROR(sink.put_scalar<uint32_t>(static_cast<uint32_t>(value.type())));
    STRATA_RETURN_IF_ERROR(put_value(sink, value));
  }
  for (const PendingTensor& t : tensors_) {
    STRATA_RETURN_IF_ERROR(sink.put_string(t.name));
    STRATA_RETURN_IF_ERROR(sink.put_scalar<uint32_t>(static_cast<uint32_t>(t.dims.size())));
    for (uint64_t d : t.dims) STRATA_RETURN_IF_ERROR(sink.put_scalar<uint64_t>(d));
    STRATA_RETURN_IF_ERROR(sink.put_scalar<uint32_t>(static_cast<uint32_t>(t.type)));
    STRATA_RETURN_IF_ERROR(sink.put_scalar<uint64_t>(t.offset));
  }
  STRATA_RETURN_IF_ERROR(sink.pad_to(alignment_));
  const uint64_t data_start = sink.pos();
  std::vector<uint8_t> scratch;
  for (const PendingTensor& t : tensors_) {
    STRATA_RETURN_IF_ERROR(sink.pad_to(alignment_));
    if (sink.pos() - data_start != t.offset) {
      return make_error(Code::Internal, "tensor '" + t.name + "': offset " + n(t.offset) +
                                            " does not match write position " +
                                            n(sink.pos() - data_start));
    }
    if (t.fill) {
      try {
        scratch.assign(t.n_bytes, 0);
      } catch (const std::bad_alloc&) {
        return make_error(Code::OutOfMemory, "tensor '" + t.name + "': cannot allocate " +
                                                 n(t.n_bytes) + " bytes to generate it");
      }
      t.fill(scratch.data(), t.n_bytes);
      STRATA_RETURN_IF_ERROR(sink.put(scratch.data(), scratch.size()));
    } else {
      STRATA_RETURN_IF_ERROR(sink.put(t.data.data(), t.data.size()));
    }
  }
  if (!tensors_.empty()) STRATA_RETURN_IF_ERROR(sink.pad_to(alignment_));
  return {};
}

Expected<std::vector<uint8_t>> GgufWriter::to_bytes() const {
  STRATA_RETURN_IF_ERROR(check());
  VectorSink sink;
  STRATA_RETURN_IF_ERROR(emit(sink));
  return std::move(sink.bytes);
}

Status GgufWriter::write(const std::filesystem::path& path) const {
  STRATA_RETURN_IF_ERROR(check());
  const std::string final_path = path.string();
  const std::string tmp_path = final_path + ".partial";
  std::FILE* f = std::fopen(tmp_path.c_str(), "wb");
  if (!f) {
    const int err = errno;
    return make_error(Code::Io, "cannot create '" + tmp_path + "': " + std::strerror(err));
  }
  std::setvbuf(f, nullptr, _IOFBF, 1 << 20);
  FileSink sink(f, tmp_path);
  Status s = emit(sink);
  const bool flushed = std::fflush(f) == 0;
  const int flush_err = errno;
  const bool closed = std::fclose(f) == 0;
  const int close_err = errno;
  if (s.ok() && (!flushed || !closed)) {
    s = make_error(Code::Io, "cannot finish writing '" + tmp_path +
                                 "': " + std::strerror(!flushed ? flush_err : close_err));
  }
  if (s.ok() && std::rename(tmp_path.c_str(), final_path.c_str()) != 0) {
    const int err = errno;
    s = make_error(Code::Io, "cannot rename '" + tmp_path + "' to '" + final_path +
                                 "': " + std::strerror(err));
  }
  if (!s.ok()) std::remove(tmp_path.c_str());
  return s;
}

}  // namespace strata::gguf
