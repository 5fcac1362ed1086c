// ui/placement/placement_parts.cpp — moving the parts of a block and the engine's normal form of a
// block's parts (see header).
#include "ui/placement/placement_parts.h"

#include <algorithm>

namespace strata::ui {

QString partName(BlockPart part) {
  switch (part) {
    case BlockPart::Whole: return QStringLiteral("whole");
    case BlockPart::Attention: return QStringLiteral("attention");
    case BlockPart::Ffn: return QStringLiteral("ffn");
    case BlockPart::Experts: return QStringLiteral("experts");
  }
  return {};
}

BlockPart partFromName(const QString& name) {
  if (name == QLatin1String("attention")) return BlockPart::Attention;
  if (name == QLatin1String("ffn")) return BlockPart::Ffn;
  if (name == QLatin1String("experts")) return BlockPart::Experts;
  return BlockPart::Whole;
}

LayerTarget ffnTargetOf(const LayerTarget& block) {
  LayerTarget t;
  if (!block.ffnDevice.isEmpty()) {
    t.devices = QStringList{block.ffnDevice};
  } else {
    t.devices = block.devices;
    t.ratio = block.ratio;
  }
  return t;
}

QList<ExpertRange> resolvedExperts(const LayerTarget& block, int nExpert) {
  if (nExpert <= 0) return {};
  QList<ExpertRange> out;
  if (block.experts.isEmpty()) {
    const LayerTarget ffn = ffnTargetOf(block);
    out.append(ExpertRange{0, nExpert, ffn.isGroup() ? QString() : ffn.devices.value(0)});
    return out;
  }
  for (ExpertRange r : block.experts) {
    r.end = r.endOf(nExpert);
    out.append(r);
  }
  return out;
}

QString expertsDevice(const LayerTarget& block, int nExpert, int begin, int end) {
  for (const ExpertRange& r : resolvedExperts(block, nExpert))
    if (r.begin <= begin && end <= r.end) return r.device;
  return {};
}

void normalizeParts(LayerTarget& block, int nExpert) {
  if (!block.isGroup() && block.ffnDevice == block.devices.value(0)) block.ffnDevice.clear();
  if (block.experts.isEmpty() || nExpert <= 0) return;
  QList<ExpertRange> merged;
  for (ExpertRange r : block.experts) {
    r.end = r.endOf(nExpert);
    if (!merged.isEmpty() && merged.last().device == r.device && merged.last().end == r.begin) merged.last().end = r.end;
    else merged.append(r);
  }
  const LayerTarget ffn = ffnTargetOf(block);
  const QString ffnDevice = ffn.isGroup() ? QString() : ffn.devices.value(0);
  const bool allWithFfn = !ffnDevice.isEmpty() && std::all_of(merged.begin(), merged.end(), [&](const ExpertRange& r) {
    return r.device == ffnDevice;
  });
  if (allWithFfn) {
    block.experts.clear();
    return;
  }
  if (merged.last().end == nExpert) merged.last().end = kAllExperts;  // "N-": to the last expert
  block.experts = merged;
}

QString movePart(LayerTarget& block, int layer, BlockPart part, const LayerTarget& lane, int expertBegin, int expertEnd,
                 int nExpert) {
  const QString blk = QStringLiteral("blk %1").arg(layer);
  if (lane.devices.isEmpty()) return QStringLiteral("the lane names no device");
  switch (part) {
    case BlockPart::Whole:
      return QStringLiteral("a whole block is not a part");
    case BlockPart::Attention: {
      // The FFN part stays where it runs: with a one-device target that is now a placement of its own.
      if (block.ffnDevice.isEmpty()) {
        if (block.isGroup())
          return blk + QStringLiteral(": its FFN part runs on the tensor group with the attention; move the whole "
                                      "block, or its FFN part to one device first");
        block.ffnDevice = block.devices.first();
      }
      const QString kv = block.kvDevice;
      block.devices = lane.devices;
      block.ratio = lane.isGroup() ? lane.ratio : QList<double>{};
      block.kvDevice = !lane.isGroup() && lane.devices.first() == kv ? QString() : kv;
      break;
    }
    case BlockPart::Ffn: {
      if (lane.isGroup())
        return blk + QStringLiteral(": the FFN part runs on one device, not a tensor group (move the attention or the "
                                    "whole block there)");
      if (nExpert > 0 && block.experts.isEmpty()) {  // the experts stay where they run
        const LayerTarget ffn = ffnTargetOf(block);
        if (ffn.isGroup())
          return blk + QStringLiteral(": its experts run with the FFN part on a tensor group; move the whole block");
        block.experts = {ExpertRange{0, kAllExperts, ffn.devices.first()}};
      }
      block.ffnDevice = lane.devices.first();
      break;
    }
    case BlockPart::Experts: {
      if (nExpert <= 0) return blk + QStringLiteral(" has a dense FFN (no experts)");
      if (expertBegin < 0 || expertEnd > nExpert || expertBegin >= expertEnd)
        return QStringLiteral("%1: experts %2-%3 out of range: the model has %4 experts (0-%5)")
            .arg(blk).arg(expertBegin).arg(expertEnd - 1).arg(nExpert).arg(nExpert - 1);
      if (lane.isGroup()) return blk + QStringLiteral(": the experts run on one device, not a tensor group");
      QList<ExpertRange> out;
      for (const ExpertRange& r : resolvedExperts(block, nExpert)) {
        if (r.device.isEmpty())
          return blk + QStringLiteral(": its experts run with the FFN part on a tensor group; place the FFN part on "
                                      "one device first");
        // Cut r at the moved range's ends; the pieces inside it go to the lane.
        QList<int> at{r.begin};
        for (int cut : {expertBegin, expertEnd})
          if (cut > r.begin && cut < r.end) at.append(cut);
        at.append(r.end);
        for (int i = 0; i + 1 < at.size(); ++i) {
          const bool moved = at[i] >= expertBegin && at[i + 1] <= expertEnd;
          out.append(ExpertRange{at[i], at[i + 1], moved ? lane.devices.first() : r.device});
        }
      }
      block.experts = out;
      break;
    }
  }
  normalizeParts(block, nExpert);
  return {};
}

QList<int> expertCuts(const LayerTarget& block, int nExpert, const QList<int>& cuts) {
  QList<int> out;
  const QList<ExpertRange> ranges = resolvedExperts(block, nExpert);
  for (int i = 1; i < ranges.size(); ++i) out.append(ranges[i].begin);
  for (int c : cuts)
    if (c > 0 && c < nExpert) out.append(c);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace strata::ui
