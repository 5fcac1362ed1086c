// engine/comm/transfer.h — point-to-point copies between any two devices: memcpy between host
// devices, the device's own copy where one side is the host, a peer copy between two devices of
// one backend that can reach each other (CUDA: cudaMemcpyPeerAsync where cudaDeviceCanAccessPeer
// says yes), and host staging otherwise. Blocks until the bytes are in place. The caller records
// the trace event (it knows the lanes, sequence and token); this returns the route taken.
#pragma once

#include <cstddef>

#include "engine/core/status.h"
#include "engine/backend/device.h"

namespace strata::comm {

enum class Route { Local, HostCopy, ToHost, FromHost, Peer, Staged };
const char* route_name(Route route);

// src_device / dst_device: where copy.src / copy.dst live; null means plain host memory.
Expected<Route> copy(backend::Device* src_device, backend::Device* dst_device, const backend::Copy2D& copy);

}  // namespace strata::comm
