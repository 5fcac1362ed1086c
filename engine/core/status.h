// engine/core/status.h — errors as values across the engine and kernel APIs.
// Depends on nothing but the standard library; never aborts, never prints.
#pragma once

#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace strata {

enum class Code {
  Ok = 0,
  InvalidArgument,  // a caller passed a value outside its domain (an option, a prompt)
  NotFound,         // a file, key, tensor or device that is not there
  Corrupt,          // a file whose bytes contradict its own structure
  Unsupported,      // a tensor type, architecture or feature we do not handle
  OutOfRange,       // an index or size beyond a limit (context length, capacity)
  OutOfMemory,      // an allocation that does not fit
  Io,               // the operating system refused (open, mmap, write)
  NotCompiled,      // a backend that this build does not contain (CUDA without CUDA)
  Cancelled,        // stopped on request
  Device,           // a device reported an error (CUDA, cuBLAS, NCCL); a sticky one marks it failed
  Internal,         // a broken invariant of our own
};

const char* code_name(Code code);

struct Error {
  Code code = Code::Internal;
  std::string message;  // names the thing and the numbers: "tensor 'x': offset 12 past 10"

  std::string to_string() const { return std::string(code_name(code)) + ": " + message; }
};

// Expected<T>: a value or an Error. Cheap to move; `value()` on an error is a
// programming mistake of the caller, checked by `ok()` first.
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : storage_(std::in_place_index<0>, std::move(value)) {}  // NOLINT
  Expected(Error error) : storage_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const { return storage_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(storage_); }
  const T& value() const& { return std::get<0>(storage_); }
  T&& value() && { return std::get<0>(std::move(storage_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const& { return std::get<1>(storage_); }
  Error&& error() && { return std::get<1>(std::move(storage_)); }

 private:
  std::variant<T, Error> storage_;
};

// Status: success or an Error, for operations with no value.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT
  static Status ok_status() { return Status(); }

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

inline Error make_error(Code code, std::string message) { return Error{code, std::move(message)}; }

}  // namespace strata

// Propagate an error from an expression returning Status or Expected<T>.
#define STRATA_CONCAT_INNER(a, b) a##b
#define STRATA_CONCAT(a, b) STRATA_CONCAT_INNER(a, b)

#define STRATA_RETURN_IF_ERROR(expr)                       \
  do {                                                     \
    auto&& strata_status_ = (expr);                        \
    if (!strata_status_.ok()) return strata_status_.error(); \
  } while (0)

// STRATA_ASSIGN_OR_RETURN(auto x, f()); — x gets the value, or the error returns.
#define STRATA_ASSIGN_OR_RETURN(lhs, expr) \
  STRATA_ASSIGN_OR_RETURN_IMPL(STRATA_CONCAT(strata_expected_, __LINE__), lhs, expr)
#define STRATA_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return std::move(tmp).error();      \
  lhs = std::move(tmp).value()
