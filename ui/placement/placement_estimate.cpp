// ui/placement/placement_estimate.cpp — local memory and speed estimate of a placement (see header).
#include "ui/placement/placement_estimate.h"

#include <QHash>

#include <algorithm>
#include <cmath>

namespace strata::ui {

namespace {

quint64 bytesOf(const QJsonValue& v) {
  const double d = v.toDouble(0);
  return d > 0 ? static_cast<quint64>(d) : 0;
}

// Member shares of `bytes`: floor(bytes x fraction) each, the last member the remainder.
QList<quint64> shares(quint64 bytes, const LayerTarget& t) {
  QList<quint64> out;
  quint64 given = 0;
  for (int i = 0; i < t.devices.size(); ++i) {
    quint64 s = i + 1 == t.devices.size() ? bytes - given
                                          : static_cast<quint64>(std::floor(static_cast<double>(bytes) * t.fraction(i)));
    s = std::min(s, bytes - given);
    out.append(s);
    given += s;
  }
  return out;
}

double msFor(quint64 bytes, double gbps) { return gbps > 0 ? static_cast<double>(bytes) / (gbps * 1e9) * 1e3 : 0.0; }

}  // namespace

ModelInfo ModelInfo::fromJson(const QJsonObject& j) {
  ModelInfo m;
  m.name = j.value(QLatin1String("name")).toString();
  m.nLayers = j.value(QLatin1String("n_layers")).toInt();
  const QJsonValue lb = j.value(QLatin1String("layer_bytes"));
  if (lb.isArray()) {
    for (const QJsonValue& v : lb.toArray()) m.layerBytes.append(bytesOf(v));
    if (m.nLayers == 0) m.nLayers = static_cast<int>(m.layerBytes.size());
  }
  if (m.nLayers < 0) m.nLayers = 0;
  const quint64 uniform = lb.isDouble() ? bytesOf(lb) : 0;
  m.layerBytes.resize(m.nLayers, uniform);
  m.embeddingBytes = bytesOf(j.value(QLatin1String("embedding_bytes")));
  m.headBytes = bytesOf(j.value(QLatin1String("head_bytes")));
  m.headTied = j.value(QLatin1String("head_tied")).toBool();
  m.kvBytesPerToken = bytesOf(j.value(QLatin1String("kv_bytes_per_token")));
  m.nEmbd = j.value(QLatin1String("n_embd")).toInt();
  m.scratchBytes = j.contains(QLatin1String("scratch_bytes")) ? bytesOf(j.value(QLatin1String("scratch_bytes")))
                                                              : kDefaultScratchBytes;
  return m;
}

QJsonObject ModelInfo::toJson() const {
  QJsonArray lb;
  for (quint64 b : layerBytes) lb.append(static_cast<double>(b));
  return {{"name", name},
          {"n_layers", nLayers},
          {"layer_bytes", lb},
          {"embedding_bytes", static_cast<double>(embeddingBytes)},
          {"head_bytes", static_cast<double>(headBytes)},
          {"head_tied", headTied},
          {"kv_bytes_per_token", static_cast<double>(kvBytesPerToken)},
          {"n_embd", nEmbd},
          {"scratch_bytes", static_cast<double>(scratchBytes)}};
}

quint64 ModelInfo::tileBytes(int tile) const {
  if (tile == 0) return embeddingBytes;
  if (tile == nLayers + 1) return headBytes;
  return tile >= 1 && tile <= nLayers ? layerBytes.value(tile - 1) : 0;
}

QList<DeviceSpec> DeviceSpec::listFromJson(const QJsonArray& devices) {
  QList<DeviceSpec> out;
  for (const QJsonValue& v : devices) {
    const QJsonObject o = v.toObject();
    DeviceSpec d;
    d.id = o.value(QLatin1String("id")).toString();
    if (d.id.isEmpty()) continue;
    d.name = o.value(QLatin1String("name")).toString(d.id);
    d.kind = o.value(QLatin1String("kind")).toString();
    d.simulated = o.value(QLatin1String("simulated")).toBool(d.kind == QLatin1String("sim"));
    d.capacity = bytesOf(o.value(QLatin1String("bytes_total")));
    d.bandwidthGbps = o.value(QLatin1String("bandwidth_gbps")).toDouble();
    d.linkGbps = o.value(QLatin1String("link_gbps")).toDouble();
    d.overheadBytes = bytesOf(o.value(QLatin1String("runtime_overhead_bytes")));
    out.append(d);
  }
  return out;
}

QJsonObject DeviceSpec::toJson() const {
  return {{"id", id},
          {"name", name},
          {"kind", kind},
          {"simulated", simulated},
          {"bytes_total", static_cast<double>(capacity)},
          {"bytes_free", static_cast<double>(capacity)},
          {"bandwidth_gbps", bandwidthGbps},
          {"link_gbps", linkGbps},
          {"runtime_overhead_bytes", static_cast<double>(overheadBytes)}};
}

QList<DeviceMemoryEstimate> estimateMemory(const PlacementData& p, const ModelInfo& model,
                                           const QList<DeviceSpec>& devices) {
  QList<DeviceMemoryEstimate> out;
  QHash<QString, int> at;
  for (const DeviceSpec& d : devices) {
    at.insert(d.id, static_cast<int>(out.size()));
    DeviceMemoryEstimate e;
    e.device = d.id;
    e.capacity = d.capacity;
    out.append(e);
  }
  QList<bool> computes(out.size(), false);
  auto add = [&](const QString& id, quint64 weights, quint64 kv, bool compute) {
    auto it = at.find(id);
    if (it == at.end()) return;
    DeviceMemoryEstimate& e = out[*it];
    e.weights += weights;
    e.kv += kv;
    e.used = true;
    if (compute) computes[*it] = true;
  };
  add(p.embeddingDevice, model.embeddingBytes, 0, false);
  add(p.headDevice, model.headBytes + (model.headTied && p.headDevice != p.embeddingDevice ? model.embeddingBytes : 0),
      0, true);
  const quint64 kvPerBlock = model.kvBytesPerToken * static_cast<quint64>(p.nCtx) * static_cast<quint64>(p.nSeq);
  for (int b = 0; b < p.layers.size() && b < model.nLayers; ++b) {
    const LayerTarget& t = p.layers[b];
    const QList<quint64> w = shares(model.layerBytes.value(b), t);
    const QList<quint64> kv = shares(kvPerBlock, t);
    const bool kvElsewhere = !t.kvDevice.isEmpty();
    for (int i = 0; i < t.devices.size(); ++i) add(t.devices[i], w[i], kvElsewhere ? 0 : kv[i], true);
    if (kvElsewhere) add(t.kvDevice, 0, kvPerBlock, false);
  }
  for (int i = 0; i < out.size(); ++i) {
    DeviceMemoryEstimate& e = out[i];
    if (computes[i]) e.scratch = model.scratchBytes;
    if (e.used) e.overhead = devices[i].overheadBytes;
    e.total = e.weights + e.kv + e.scratch + e.overhead;
    e.fits = e.total <= e.capacity;
    e.shortfall = e.fits ? 0 : e.total - e.capacity;
  }
  return out;
}

CostPrediction predictCost(const PlacementData& p, const ModelInfo& model, const QList<DeviceSpec>& devices) {
  CostPrediction c;
  QHash<QString, DeviceSpec> byId;
  for (const DeviceSpec& d : devices) byId.insert(d.id, d);
  auto bw = [&](const QString& id) {
    const double g = byId.value(id).bandwidthGbps;
    return g > 0 ? g : kDefaultBandwidthGbps;
  };
  const quint64 hidden = static_cast<quint64>(std::max(model.nEmbd, 0)) * 4;
  // ms to move `bytes` between the devices of a and b: bytes / min(link) + latency.
  auto transfer = [&](const QStringList& a, const QStringList& b, quint64 bytes) {
    double minLink = 0;
    for (const QString& id : a + b) {
      const double l = byId.value(id).linkGbps;
      if (l > 0) minLink = minLink > 0 ? std::min(minLink, l) : l;
    }
    return msFor(bytes, minLink) + kLinkLatencyUs / 1000.0;
  };

  // Tiles in order: embedding, blocks, head, each with its target; stages are runs of equal targets.
  struct Tile {
    LayerTarget target;
    double ms;
  };
  QList<Tile> tiles;
  tiles.append({LayerTarget{{p.embeddingDevice}, {}, {}}, 0.0});  // one row read: negligible
  for (int b = 0; b < p.layers.size() && b < model.nLayers; ++b) {
    const LayerTarget& t = p.layers[b];
    const QList<quint64> w = shares(model.layerBytes.value(b), t);
    double ms = 0;
    for (int i = 0; i < t.devices.size(); ++i) ms = std::max(ms, msFor(w[i], bw(t.devices[i])));
    if (t.isGroup()) {
      ms += 2 * transfer(t.devices, {}, hidden);
      c.transferBytesPerToken += 2 * hidden;
    }
    if (!t.kvDevice.isEmpty() && !t.devices.contains(t.kvDevice)) {
      ms += 2 * transfer(t.devices, {t.kvDevice}, hidden);
      c.transferBytesPerToken += 2 * hidden;
    }
    tiles.append({LayerTarget{t.devices, t.ratio, {}}, ms});
  }
  tiles.append({LayerTarget{{p.headDevice}, {}, {}}, msFor(model.headBytes, bw(p.headDevice))});

  // One pass: a stage's time is its tiles plus receiving the hidden state at its start.
  QList<double> stageMs;
  for (int i = 0; i < tiles.size(); ++i) {
    if (i == 0 || !tiles[i].target.sameTarget(tiles[i - 1].target)) {
      stageMs.append(0.0);
      if (i > 0) {
        const QStringList& prev = tiles[i - 1].target.devices;
        const QStringList& next = tiles[i].target.devices;
        if (std::any_of(next.begin(), next.end(), [&](const QString& d) { return !prev.contains(d); })) {
          ++c.boundaries;
          stageMs.last() += transfer(prev, next, hidden);
          c.transferBytesPerToken += hidden;
        }
      }
    }
    stageMs.last() += tiles[i].ms;
  }
  c.stages = static_cast<int>(stageMs.size());
  double s = 0, slowest = 0;
  for (double ms : stageMs) {
    s += ms;
    slowest = std::max(slowest, ms);
  }
  c.decodeMsPerToken = s;
  const double n = std::max(p.nSeq, 1);
  const double round = std::max(s, n * slowest);
  c.decodeTokensPerS = round > 0 ? 1000.0 * n / round : 0.0;
  return c;
}

}  // namespace strata::ui
