// engine/comm/transfer.cpp — routing a copy between two devices.
#include "engine/comm/transfer.h"

#include <algorithm>
#include <vector>

namespace strata::comm {

const char* route_name(Route route) {
  switch (route) {
    case Route::Local: return "local";
    case Route::HostCopy: return "host";
    case Route::ToHost: return "to-host";
    case Route::FromHost: return "from-host";
    case Route::Peer: return "peer";
    case Route::Staged: return "staged";
  }
  return "?";
}

namespace {
// Through a packed host buffer: the source's copy out, then the destination's copy in (each side
// pays its own link).
Expected<Route> staged(backend::Device& src_dev, backend::Device& dst_dev, const backend::Copy2D& c) {
  std::vector<uint8_t> staging(c.width * c.height);
  STRATA_RETURN_IF_ERROR(src_dev.copy_to_host({c.src, c.src_pitch, staging.data(), c.width, c.width, c.height}));
  STRATA_RETURN_IF_ERROR(dst_dev.copy_from_host({staging.data(), c.width, c.dst, c.dst_pitch, c.width, c.height}));
  return Route::Staged;
}
}  // namespace

Expected<Route> copy(backend::Device* src_dev, backend::Device* dst_dev, const backend::Copy2D& c) {
  if (c.width == 0 || c.height == 0) return Route::Local;
  const bool src_host = !src_dev || src_dev->host_visible();
  const bool dst_host = !dst_dev || dst_dev->host_visible();
  if (src_dev && src_dev == dst_dev) {
    STRATA_RETURN_IF_ERROR(src_dev->copy_within(c));
    return Route::Local;
  }
  if (!src_host && dst_host) {
    // A simulated destination still pays its link: stage through host memory then its copy-in.
    if (dst_dev && dst_dev->info().simulated) {
      return staged(*src_dev, *dst_dev, c);
    }
    STRATA_RETURN_IF_ERROR(src_dev->copy_to_host(c));
    return Route::ToHost;
  }
  if (src_host && !dst_host) {
    if (src_dev && src_dev->info().simulated) {
      return staged(*src_dev, *dst_dev, c);
    }
    STRATA_RETURN_IF_ERROR(dst_dev->copy_from_host(c));
    return Route::FromHost;
  }
  if (src_host && dst_host) {
    // Between host devices the copy crosses the declared link of a simulated side (its copy
    // calls pace themselves); plain memcpy otherwise.
    if (dst_dev && dst_dev->info().simulated) {
      STRATA_RETURN_IF_ERROR(dst_dev->copy_from_host(c));
    } else if (src_dev && src_dev->info().simulated) {
      STRATA_RETURN_IF_ERROR(src_dev->copy_to_host(c));
    } else {
      backend::Device* any = src_dev ? src_dev : dst_dev;
      if (any) {
        STRATA_RETURN_IF_ERROR(any->copy_within(c));
      } else {
        for (size_t r = 0; r < c.height; ++r)
          std::copy_n(static_cast<const uint8_t*>(c.src) + r * c.src_pitch, c.width,
                      static_cast<uint8_t*>(c.dst) + r * c.dst_pitch);
      }
    }
    return Route::HostCopy;
  }
  // Two devices the host cannot read: directly where the backend can, else through the host.
  if (Status s = src_dev->copy_to_peer(c, *dst_dev); s.ok()) return Route::Peer;
  else if (s.error().code != Code::Unsupported) return s.error();
  return staged(*src_dev, *dst_dev, c);
}

}  // namespace strata::comm
