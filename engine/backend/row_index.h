// engine/backend/row_index.h — the argument check shared by every backend's gather_rows and
// scale_add_rows (engine/backend/ops.h), so that all of them refuse the same inputs with the same
// words. Host memory only; no device types.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace strata::backend {

// rows: host [n_rows] indices into a [limit]-row matrix. InvalidArgument naming op and the first
// index outside [0, limit), or (distinct) the first index given twice.
inline Status check_row_indices(const char* op, const int32_t* rows, int64_t n_rows, int64_t limit, bool distinct) {
  if (n_rows < 0 || limit < 0 || (n_rows > 0 && rows == nullptr))
    return Error{Code::InvalidArgument, std::string(op) + ": " + std::to_string(n_rows) + " rows of a " +
                                            std::to_string(limit) + "-row matrix with no index list"};
  std::vector<uint8_t> seen(distinct ? static_cast<size_t>(limit) : 0, 0);
  for (int64_t i = 0; i < n_rows; ++i) {
    const int32_t r = rows[i];
    if (r < 0 || r >= limit)
      return Error{Code::InvalidArgument, std::string(op) + ": row " + std::to_string(r) + " (index " +
                                              std::to_string(i) + ") is outside [0, " + std::to_string(limit) + ")"};
    if (distinct) {
      if (seen[static_cast<size_t>(r)])
        return Error{Code::InvalidArgument, std::string(op) + ": row " + std::to_string(r) + " is given twice"};
      seen[static_cast<size_t>(r)] = 1;
    }
  }
  return {};
}

}  // namespace strata::backend
