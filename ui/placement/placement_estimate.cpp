// ui/placement/placement_estimate.cpp — parsing the engine's model sizes, devices and placement
// estimates (see header). No estimate is computed here.
#include "ui/placement/placement_estimate.h"

#include <algorithm>

#include <QCoreApplication>

namespace strata::ui {

namespace {

quint64 bytesOf(const QJsonValue& v) {
  const double d = v.toDouble(0);
  return d > 0 ? static_cast<quint64>(d) : 0;
}

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
  const QJsonArray parts = j.value(QLatin1String("layer_parts")).toArray();
  for (int i = 0; i < m.nLayers; ++i) {
    const QJsonObject o = parts.at(i).toObject();
    m.layerParts.append(PartBytes{bytesOf(o.value(QLatin1String("attention_bytes"))), bytesOf(o.value(QLatin1String("ffn_bytes"))),
                                  bytesOf(o.value(QLatin1String("experts_bytes")))});
  }
  m.nExpert = std::max(0, j.value(QLatin1String("n_expert")).toInt());
  m.nExpertUsed = std::max(0, j.value(QLatin1String("n_expert_used")).toInt());
  return m;
}

quint64 ModelInfo::expertsBytes(int layer, int expertBegin, int expertEnd) const {
  if (nExpert <= 0 || expertEnd <= expertBegin) return 0;
  return layerParts.value(layer).experts / static_cast<quint64>(nExpert) * static_cast<quint64>(expertEnd - expertBegin);
}

QJsonObject ModelInfo::toJson() const {
  QJsonArray lb;
  for (quint64 b : layerBytes) lb.append(static_cast<double>(b));
  QJsonArray parts;
  for (const PartBytes& p : layerParts)
    parts.append(QJsonObject{{"attention_bytes", static_cast<double>(p.attention)},
                             {"ffn_bytes", static_cast<double>(p.ffn)},
                             {"experts_bytes", static_cast<double>(p.experts)}});
  return {{"name", name},
          {"n_layers", nLayers},
          {"layer_bytes", lb},
          {"layer_parts", parts},
          {"embedding_bytes", static_cast<double>(embeddingBytes)},
          {"head_bytes", static_cast<double>(headBytes)},
          {"n_expert", nExpert},
          {"n_expert_used", nExpertUsed}};
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
    out.append(d);
  }
  return out;
}

CostPrediction parseCost(const QJsonObject& c) {
  CostPrediction p;
  p.decodeMsPerToken = c.value(QLatin1String("decode_ms_per_token")).toDouble();
  p.decodeTokensPerS = c.value(QLatin1String("decode_tokens_per_s")).toDouble();
  p.prefillTokensPerS = c.value(QLatin1String("prefill_tokens_per_s")).toDouble();
  p.stages = static_cast<int>(c.value(QLatin1String("stages")).toArray().size());
  p.boundaries = c.value(QLatin1String("boundaries")).toInt();
  p.transferBytesPerToken = bytesOf(c.value(QLatin1String("transfer_bytes_per_token")));
  p.nSeq = qMax(1, c.value(QLatin1String("n_seq")).toInt(1));
  return p;
}

namespace {
// "1266.0 tok/s decode (0.79 ms/token)" and, with several sequences, ", 2662.5 tok/s over 4 sequences".
QString decodeFigures(const CostPrediction& c) {
  const double perReply = c.decodeMsPerToken > 0 ? 1000.0 / c.decodeMsPerToken : 0.0;
  QString s = QCoreApplication::translate("PlacementEditor", "%1 tok/s decode (%2 ms/token)")
                  .arg(perReply, 0, 'f', 1)
                  .arg(c.decodeMsPerToken, 0, 'f', 2);
  if (c.nSeq > 1)
    s += QCoreApplication::translate("PlacementEditor", ", %1 tok/s over %2 sequences")
             .arg(c.decodeTokensPerS, 0, 'f', 1)
             .arg(c.nSeq);
  return s;
}
}  // namespace

QString predictionText(const CostPrediction& c, const CostPrediction* onThisMachine) {
  QString s = onThisMachine ? QCoreApplication::translate("PlacementEditor", "Predicted, declared hardware: ")
                            : QCoreApplication::translate("PlacementEditor", "Predicted: ");
  s += decodeFigures(c);
  s += QCoreApplication::translate("PlacementEditor", ", %1 tok/s prefill").arg(c.prefillTokensPerS, 0, 'f', 0);
  if (onThisMachine)
    s += QCoreApplication::translate("PlacementEditor", " · this machine: %1")
             .arg(decodeFigures(*onThisMachine));
  return s;
}

EngineEstimate parseEstimate(const QJsonObject& answer, const QList<DeviceSpec>& devices) {
  EngineEstimate e;
  for (const DeviceSpec& d : devices) {
    DeviceMemoryEstimate m;
    m.device = d.id;
    m.capacity = d.capacity;
    e.memory.append(m);
  }
  const QJsonArray listed = answer.value(QLatin1String("memory")).toObject().value(QLatin1String("devices")).toArray();
  for (const QJsonValue& v : listed) {
    const QJsonObject o = v.toObject();
    DeviceMemoryEstimate m;
    m.device = o.value(QLatin1String("device")).toString();
    m.weights = bytesOf(o.value(QLatin1String("weight_bytes")));
    m.kv = bytesOf(o.value(QLatin1String("kv_bytes")));
    m.scratch = bytesOf(o.value(QLatin1String("scratch_bytes")));
    m.overhead = bytesOf(o.value(QLatin1String("overhead_bytes")));
    const QJsonObject parts = o.value(QLatin1String("parts")).toObject();
    m.attention = bytesOf(parts.value(QLatin1String("attention_bytes")));
    m.ffn = bytesOf(parts.value(QLatin1String("ffn_bytes")));
    m.experts = bytesOf(parts.value(QLatin1String("experts_bytes")));
    m.total = bytesOf(o.value(QLatin1String("total_bytes")));
    m.capacity = bytesOf(o.value(QLatin1String("capacity_bytes")));
    m.fits = o.value(QLatin1String("fits")).toBool(true);
    m.shortfall = bytesOf(o.value(QLatin1String("shortfall_bytes")));
    m.used = true;
    bool placed = false;
    for (DeviceMemoryEstimate& known : e.memory)
      if (known.device == m.device) {
        known = m;
        placed = true;
      }
    if (!placed) e.memory.append(m);
  }
  const QJsonValue cost = answer.value(QLatin1String("cost"));
  e.hasCost = cost.isObject();
  if (e.hasCost) e.cost = parseCost(cost.toObject());
  const QJsonValue here = answer.value(QLatin1String("cost_on_this_machine"));
  e.hasOnThisMachine = here.isObject();
  if (e.hasOnThisMachine) e.onThisMachine = parseCost(here.toObject());
  e.fits = answer.value(QLatin1String("fits")).toBool();
  e.error = answer.value(QLatin1String("error")).toString();
  return e;
}

}  // namespace strata::ui
