// engine/dist/mpi_link_stub.cpp — RankLink in a build without MPI: one process, no ranks.
#include "engine/dist/rank_link.h"

namespace strata::dist {

bool RankLink::compiled() { return false; }
Expected<std::unique_ptr<RankLink>> RankLink::start(int64_t, int64_t) {
  return Error{Code::NotCompiled, "built without MPI (configure with STRATA_MPI=ON and install libopenmpi-dev)"};
}

}  // namespace strata::dist
