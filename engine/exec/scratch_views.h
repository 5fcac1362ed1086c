// engine/exec/scratch_views.h — carves a device runtime's scratch buffer into the views the block
// arithmetic (arch::BlockForward) works in, in plan::ScratchLayout's order.
#pragma once

#include "engine/arch/block_forward.h"
#include "engine/plan/scratch_layout.h"

namespace strata::exec {

// base: layout.floats() floats of one device buffer; threads: the Ops' threads (the attention
// scores are [threads][n_ctx]).
arch::ScratchViews carve_scratch(float* base, const plan::ScratchLayout& layout, int threads);

}  // namespace strata::exec
