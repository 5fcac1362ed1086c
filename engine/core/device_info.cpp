// engine/core/device_info.cpp — the capability queries of DeviceCaps.
#include "engine/core/device_info.h"

#include <algorithm>

namespace strata {

bool DeviceCaps::keeps_kv(kernels::DType t) const {
  return std::find(kv_types.begin(), kv_types.end(), t) != kv_types.end();
}

bool DeviceCaps::takes_weights(kernels::DType t) const {
  return weight_types.empty() || std::find(weight_types.begin(), weight_types.end(), t) != weight_types.end();
}

}  // namespace strata
