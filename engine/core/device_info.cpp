// engine/core/device_info.cpp — names of the device kinds (as in placements, the API and the CLI).
#include "engine/core/device_info.h"

namespace strata {

const char* device_kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::Cpu: return "cpu";
    case DeviceKind::Simulated: return "sim";
    case DeviceKind::Cuda: return "cuda";
  }
  return "?";
}

}  // namespace strata
