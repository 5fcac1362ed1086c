// tests/device_set.h — devices made from a --devices spec, owned by the test, as the
// list of pointers Pipeline::create takes.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/backend/device.h"
#include "engine/backend/registry/registry.h"

namespace strata::test {

struct DeviceSet {
  std::vector<std::unique_ptr<backend::Device>> owned;
  std::vector<backend::Device*> list() const {
    std::vector<backend::Device*> v;
    for (auto& d : owned) v.push_back(d.get());
    return v;
  }
};

// One CPU thread at 20 GB/s; a bad spec fails the test.
inline DeviceSet make_device_set(const std::string& spec) {
  auto d = backend::make_devices(spec, 1, 20.0);
  EXPECT_TRUE(d.ok()) << d.error().to_string();
  if (!d.ok()) return {};
  return DeviceSet{std::move(*d)};
}

}  // namespace strata::test
