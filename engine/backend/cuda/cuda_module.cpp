// engine/backend/cuda/cuda_module.cpp — the CUDA backend as the registry sees it, and the module's
// one exported symbol (module_abi.h). Built into libstrata-backend-cuda.so with cuBLAS and NCCL;
// the engine loads it at start when present (module_loader.h).
// Threads: every Backend call may be made from any thread.
#include <algorithm>
#include <string>

#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/module_abi.h"

namespace strata::backend::cuda {

namespace {

// "cuda" -> every device; "cuda:N" -> device N. InvalidArgument for anything else.
Expected<std::vector<int>> ordinals_of(std::span<const std::string> fields) {
  const std::string entry = join_fields(fields);
  if (fields.size() > 2) return Error{Code::InvalidArgument, "device '" + entry + "': expected cuda or cuda:N"};
  const int count = device_count();
  if (fields.size() == 1) {
    if (count == 0) return Error{Code::NotFound, "device 'cuda': no CUDA device found (" + runtime_description() + ")"};
    std::vector<int> all(static_cast<size_t>(count));
    for (int n = 0; n < count; ++n) all[static_cast<size_t>(n)] = n;
    return all;
  }
  size_t pos = 0;
  int n = -1;
  try {
    n = std::stoi(fields[1], &pos);
  } catch (...) {
    pos = 0;
  }
  if (pos != fields[1].size() || n < 0 || n > 1023)
    return Error{Code::InvalidArgument, "device '" + entry + "': '" + fields[1] + "' is not a CUDA device number"};
  if (n >= count)
    return Error{Code::NotFound, "device '" + entry + "': " + std::to_string(count) + " CUDA device(s) found (" +
                                     runtime_description() + ")"};
  return std::vector<int>{n};
}

class CudaBackend final : public Backend {
 public:
  std::string name() const override { return "cuda"; }
  std::string describe() const override { return runtime_description(); }
  int device_count() const override { return cuda::device_count(); }
  bool finds_hardware() const override { return true; }

  Expected<std::vector<std::unique_ptr<Device>>> open(std::span<const std::string> fields,
                                                      const OpenOptions&) override {
    STRATA_ASSIGN_OR_RETURN(std::vector<int> ordinals, ordinals_of(fields));
    std::vector<std::unique_ptr<Device>> out;
    for (int n : ordinals) {
      STRATA_ASSIGN_OR_RETURN(auto device, open_device(n, "cuda" + std::to_string(n)));
      out.push_back(std::move(device));
    }
    return out;
  }

  void probe(std::vector<std::unique_ptr<Device>>& opened, std::vector<DeviceInfo>& failed,
             const OpenOptions&) override {
    for (int n = 0; n < cuda::device_count(); ++n) {
      auto device = open_device(n, "cuda" + std::to_string(n));
      if (device.ok()) {
        opened.push_back(std::move(*device));
        continue;
      }
      DeviceInfo f;
      f.id = "cuda" + std::to_string(n);
      f.backend = "cuda";
      f.name = "CUDA device " + std::to_string(n);
      f.ordinal = n;
      f.failed = true;
      f.failure = device.error().message;
      failed.push_back(std::move(f));
    }
  }

  Expected<std::unique_ptr<Communicator>> make_communicator(const std::vector<Device*>& members) override {
    return make_nccl_communicator(members);
  }
  Expected<std::vector<uint8_t>> collective_unique_id() override { return nccl_unique_id(); }
  Expected<std::unique_ptr<Communicator>> make_rank_communicator(const std::vector<Device*>& local,
                                                                 RankCollectivePart part) override {
    return make_nccl_rank_communicator(local, std::move(part));
  }
};

}  // namespace

}  // namespace strata::backend::cuda

// The module's entry: the registry calls it once after dlopen.
extern "C" __attribute__((visibility("default"))) strata::backend::Backend* strata_backend_module_v1(
    const char* engine_abi, const char** module_abi) {
  const std::string& mine = strata::backend::backend_abi_tag();
  if (module_abi) *module_abi = mine.c_str();
  if (!engine_abi || mine != engine_abi) return nullptr;
  static strata::backend::cuda::CudaBackend backend;
  return &backend;
}
