// engine/backend/backend.cpp — what a backend does by default: no collective of its own (backend.h).
#include "engine/backend/backend.h"

namespace strata::backend {

std::string join_fields(std::span<const std::string> fields) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) out += (i ? ":" : "") + fields[i];
  return out;
}

Expected<std::unique_ptr<Communicator>> Backend::make_communicator(const std::vector<Device*>&) {
  return Error{Code::Unsupported, "backend '" + name() + "' has no collective of its own"};
}

Expected<std::vector<uint8_t>> Backend::collective_unique_id() {
  return Error{Code::Unsupported, "backend '" + name() + "' has no collective of its own"};
}

Expected<std::unique_ptr<Communicator>> Backend::make_rank_communicator(const std::vector<Device*>&,
                                                                        RankCollectivePart) {
  return Error{Code::Unsupported, "backend '" + name() + "' has no collective of its own"};
}

Expected<std::vector<std::unique_ptr<Device>>> MissingBackend::open(std::span<const std::string> fields,
                                                                    const OpenOptions&) {
  return Error{Code::NotCompiled, "device '" + join_fields(fields) + "': " + why_};
}

}  // namespace strata::backend
