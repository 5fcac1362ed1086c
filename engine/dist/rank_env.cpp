// engine/dist/rank_env.cpp — whether mpirun started this process among several, from the
// environment the launchers set (OpenMPI, PMI, PMIx, MPICH's Hydra). No MPI here: a build without
// MPI uses it to refuse to run one engine per process by mistake.
#include <cstdlib>

#include "engine/dist/rank_link.h"

namespace strata::dist {

namespace {
int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : 0;
}
}  // namespace

bool RankLink::launched_with_ranks() {
  return env_int("OMPI_COMM_WORLD_SIZE") > 1 || env_int("PMI_SIZE") > 1 || env_int("PMIX_SIZE") > 1 ||
         env_int("MPI_LOCALNRANKS") > 1;
}

}  // namespace strata::dist
