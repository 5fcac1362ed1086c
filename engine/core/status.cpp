// engine/core/status.cpp — names of error codes for messages and logs.
// Depends on nothing but status.h.
#include "engine/core/status.h"

namespace strata {

const char* code_name(Code code) {
  switch (code) {
    case Code::Ok: return "ok";
    case Code::InvalidArgument: return "invalid argument";
    case Code::NotFound: return "not found";
    case Code::Corrupt: return "corrupt";
    case Code::Unsupported: return "unsupported";
    case Code::OutOfRange: return "out of range";
    case Code::OutOfMemory: return "out of memory";
    case Code::Io: return "i/o error";
    case Code::NotCompiled: return "not compiled";
    case Code::Cancelled: return "cancelled";
    case Code::Device: return "device error";
    case Code::Internal: return "internal error";
  }
  return "unknown error";
}

}  // namespace strata
