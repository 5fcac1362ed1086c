// ui/placement/gpu_offload.h — LM Studio's "GPU offload" control as placement arithmetic: how many
// blocks run on accelerators, and the placement that offloads N of them, by llama.cpp's -ngl rule
// (as the engine's --gpu-layers: the last N blocks, the head too when all are offloaded). Pure
// functions on PlacementData; no widgets, no engine headers.
#pragma once

#include <QList>

#include "ui/placement/placement_data.h"
#include "ui/placement/placement_estimate.h"

namespace strata::ui {

// Devices that are not the host CPU (kind != "cpu"), in list order.
QList<DeviceSpec> accelerators(const QList<DeviceSpec>& devices);

// Blocks whose target includes an accelerator.
int offloadedBlocks(const PlacementData& p, const QList<DeviceSpec>& devices);

// `base` (its context, sequences, batch and KV type kept) with the last `n` blocks on the
// accelerators, split over them in proportion to their capacity (llama.cpp's layer split: block b
// of the n to the first device whose cumulative share exceeds b / n), the rest and the embedding on
// the CPU; n == all blocks puts the embedding with the first offloaded block and the head with the
// last. Every block's KV cache stays with it and parts are joined. `base` unchanged when there is
// no CPU or no accelerator.
PlacementData offloadPlacement(const PlacementData& base, const QList<DeviceSpec>& devices, int n);

// When blocks run on the CPU although accelerators are present (an automatic plan that fell back
// because the model does not fit them): one sentence that says how many, where the rest are and
// what helps; "" otherwise.
QString cpuFallbackNotice(const PlacementData& p, const QList<DeviceSpec>& devices);

}  // namespace strata::ui
