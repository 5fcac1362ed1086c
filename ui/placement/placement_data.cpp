// ui/placement/placement_data.cpp — placement JSON parsing and writing for the GUI (docs/placement.md).
#include "ui/placement/placement_data.h"

#include <QJsonArray>
#include <QSet>

#include <cmath>

namespace strata::ui {

namespace {

const QSet<QString>& knownTopFields() {
  static const QSet<QString> f = {"version", "n_ctx", "n_seq", "max_batch", "kv_type", "swa_full", "embedding", "layers", "head"};
  return f;
}
const QSet<QString>& knownEntryFields() {
  static const QSet<QString> f = {"layers", "device", "group", "ratio", "kv_device", "ffn_device", "experts"};
  return f;
}

QString jsonTypeName(const QJsonValue& v) {
  switch (v.type()) {
    case QJsonValue::Double: return v.toDouble() == std::floor(v.toDouble()) ? QStringLiteral("an integer") : QStringLiteral("a number");
    case QJsonValue::Array: return QStringLiteral("an array");
    case QJsonValue::Object: return QStringLiteral("an object");
    case QJsonValue::Bool: return QStringLiteral("a boolean");
    case QJsonValue::Null: return QStringLiteral("a null");
    default: return QStringLiteral("a string");
  }
}

// A device id field ("ffn_device", an experts range's "device"): a non-empty string.
bool readDeviceId(const QJsonValue& v, const QString& where, QString* id, QString* error) {
  if (!v.isString()) return *error = QStringLiteral("%1 must be a device id string, not %2").arg(where, jsonTypeName(v)), false;
  if (v.toString().isEmpty()) return *error = QStringLiteral("%1 is an empty device id").arg(where), false;
  *id = v.toString();
  return true;
}

QString rangeText(int a, int b) { return a == b ? QString::number(a) : QStringLiteral("%1-%2").arg(a).arg(b); }

// "5", 5, "0-17" -> [first, last]; false with *error on bad text.
bool parseRange(const QJsonValue& v, int* first, int* last, QString* error) {
  if (v.isDouble()) {
    const double d = v.toDouble();
    if (d != std::floor(d)) return *error = QStringLiteral("layer %1 is not a whole number").arg(d), false;
    if (d < 0) return *error = QStringLiteral("layer %1 is negative").arg(d), false;
    *first = *last = static_cast<int>(d);
    return true;
  }
  if (!v.isString()) return *error = QStringLiteral("'layers' must be a number or a string"), false;
  const QString text = v.toString().trimmed();
  const int dash = text.indexOf(QLatin1Char('-'), 1);
  bool ok1 = false, ok2 = true;
  const QString a = dash < 0 ? text : text.left(dash);
  *first = a.toInt(&ok1);
  *last = dash < 0 ? *first : text.mid(dash + 1).toInt(&ok2);
  if (!ok1 || !ok2) return *error = QStringLiteral("'%1' is not a layer number").arg(text), false;
  if (*first < 0) return *error = QStringLiteral("layer %1 is negative").arg(*first), false;
  if (*last < *first) return *error = QStringLiteral("layer range '%1' ends before it starts").arg(text), false;
  return true;
}

bool readDevice(const QJsonObject& o, const QString& what, QString* device, QString* error) {
  if (!o.value(QLatin1String("device")).isString())
    return *error = QStringLiteral("placement: '%1' needs a 'device'").arg(what), false;
  if (o.contains(QLatin1String("group")))
    return *error = QStringLiteral("the %1 must be on one device, not a group").arg(what), false;
  *device = o.value(QLatin1String("device")).toString();
  return true;
}

// "experts": "cpu" (every expert), or [{"experts": "0-63", "device": "gpu0"}, {"experts": "64-",
// "device": "cpu"}] (inclusive; "N-" runs to the last expert). As the engine parses it; order and
// coverage against the model are the engine's validation.
bool parseExperts(const QJsonValue& v, const QString& where, QList<ExpertRange>* out, QString* error) {
  out->clear();
  if (v.isString()) {
    ExpertRange all;
    if (!readDeviceId(v, where, &all.device, error)) return false;
    out->append(all);
    return true;
  }
  if (!v.isArray() || v.toArray().isEmpty())
    return *error = QStringLiteral("%1 must be a device id or a non-empty array of {\"experts\": \"0-63\", \"device\": id}, not %2")
                        .arg(where, jsonTypeName(v)),
           false;
  const QJsonArray ranges = v.toArray();
  for (int i = 0; i < ranges.size(); ++i) {
    const QString at = QStringLiteral("%1[%2]").arg(where).arg(i);
    if (!ranges[i].isObject()) return *error = QStringLiteral("%1 must be an object, not %2").arg(at, jsonTypeName(ranges[i])), false;
    const QJsonObject r = ranges[i].toObject();
    for (auto it = r.begin(); it != r.end(); ++it)
      if (it.key() != QLatin1String("experts") && it.key() != QLatin1String("device"))
        return *error = QStringLiteral("%1: unknown field '%2' (expected: experts, device)").arg(at, it.key()), false;
    if (!r.contains(QLatin1String("experts")) || !r.contains(QLatin1String("device")))
      return *error = QStringLiteral("%1: needs 'experts' and 'device'").arg(at), false;
    ExpertRange range;
    if (!readDeviceId(r.value(QLatin1String("device")), at + QStringLiteral(": 'device'"), &range.device, error)) return false;
    const QJsonValue e = r.value(QLatin1String("experts"));
    const QString text = e.toString();
    QString err;
    if (e.isString() && text.endsWith(QLatin1Char('-')) && text.size() > 1) {  // "64-": to the last expert
      bool ok = false;
      range.begin = text.chopped(1).toInt(&ok);
      if (!ok || range.begin < 0) return *error = QStringLiteral("%1: expert: '%2' is not a layer number").arg(at, text.chopped(1)), false;
      range.end = kAllExperts;
    } else {
      int first = 0, last = 0;
      if (!parseRange(e, &first, &last, &err)) return *error = QStringLiteral("%1: expert: %2").arg(at, err), false;
      range.begin = first;
      range.end = last + 1;
    }
    out->append(range);
  }
  return true;
}

QString expertsText(const ExpertRange& r) {
  if (r.end == kAllExperts) return QStringLiteral("%1-").arg(r.begin);
  return r.end - r.begin == 1 ? QString::number(r.begin) : QStringLiteral("%1-%2").arg(r.begin).arg(r.end - 1);
}

}  // namespace

double LayerTarget::fraction(int i) const {
  if (devices.size() <= 1) return 1.0;
  if (ratio.size() != devices.size()) return 1.0 / devices.size();
  double sum = 0;
  for (double r : ratio) sum += r;
  return sum > 0 ? ratio[i] / sum : 1.0 / devices.size();
}

bool LayerTarget::sameTarget(const LayerTarget& o) const {
  if (devices != o.devices) return false;
  for (int i = 0; i < devices.size(); ++i)
    if (std::abs(fraction(i) - o.fraction(i)) > 1e-9) return false;
  return true;
}

QString LayerTarget::label() const {
  if (!isGroup()) return devices.value(0);
  QStringList r;
  for (int i = 0; i < devices.size(); ++i)
    r << QString::number(ratio.size() == devices.size() ? ratio[i] : 1.0, 'g', 4);
  return devices.join(QLatin1Char('+')) + QLatin1Char(' ') + r.join(QLatin1Char(':'));
}

bool PlacementData::operator==(const PlacementData& o) const {
  return nCtx == o.nCtx && nSeq == o.nSeq && maxBatch == o.maxBatch && kvType == o.kvType && swaFull == o.swaFull &&
         embeddingDevice == o.embeddingDevice &&
         headDevice == o.headDevice && layers == o.layers;
}

PlacementData PlacementData::allOn(const QString& device, int nLayers, int nCtx) {
  PlacementData p;
  p.nCtx = nCtx;
  p.embeddingDevice = p.headDevice = device;
  for (int i = 0; i < nLayers; ++i) p.layers.append(LayerTarget{{device}, {}, {}, {}, {}});
  return p;
}

PlacementData PlacementData::fromJson(const QJsonObject& json, int nLayers, QString* error) {
  QString err;
  auto fail = [&](const QString& message) {
    if (error) *error = message;
    return PlacementData{};
  };
  for (auto it = json.begin(); it != json.end(); ++it)
    if (!knownTopFields().contains(it.key()))
      return fail(QStringLiteral("placement: unknown field '%1'").arg(it.key()));
  if (json.value(QLatin1String("version")).toInt(-1) != 1)
    return fail(QStringLiteral("placement: version %1 is not supported (only 1)")
                    .arg(json.value(QLatin1String("version")).toVariant().toString()));
  for (const char* key : {"n_ctx", "n_seq", "max_batch"})
    if (json.contains(QLatin1String(key)) && !json.value(QLatin1String(key)).isDouble())
      return fail(QStringLiteral("placement: '%1' must be an integer").arg(QLatin1String(key)));
  if (!json.contains(QLatin1String("n_ctx"))) return fail(QStringLiteral("placement: missing 'n_ctx'"));
  for (const char* key : {"embedding", "head", "layers"})
    if (!json.contains(QLatin1String(key))) return fail(QStringLiteral("placement: missing '%1'").arg(QLatin1String(key)));

  PlacementData p;
  p.nCtx = json.value(QLatin1String("n_ctx")).toInt();
  p.nSeq = json.value(QLatin1String("n_seq")).toInt(1);
  p.maxBatch = json.value(QLatin1String("max_batch")).toInt(256);
  if (p.nCtx < 1 || p.nCtx > (1 << 24)) return fail(QStringLiteral("placement: n_ctx %1 is out of range 1..16777216").arg(p.nCtx));
  if (p.nSeq < 1 || p.nSeq > 256) return fail(QStringLiteral("placement: n_seq %1 is out of range 1..256").arg(p.nSeq));
  if (json.contains(QLatin1String("kv_type"))) {
    const QJsonValue kv = json.value(QLatin1String("kv_type"));
    if (!kv.isString()) return fail(QStringLiteral("placement: 'kv_type' must be a string (f32, f16, q8_0)"));
    const QString name = kv.toString();
    if (name != QLatin1String("f16") && name != QLatin1String("F16") && name != QLatin1String("f32") &&
        name != QLatin1String("F32") && name != QLatin1String("q8_0") && name != QLatin1String("Q8_0"))
      return fail(QStringLiteral("KV cache type '%1' is not one of f32, f16, q8_0").arg(name));
    p.kvType = name.toLower() == QLatin1String("f16") ? QString() : name.toLower();  // f16: the default
  }
  if (json.contains(QLatin1String("swa_full"))) {
    const QJsonValue full = json.value(QLatin1String("swa_full"));
    if (!full.isBool()) return fail(QStringLiteral("placement: 'swa_full' must be true or false"));
    p.swaFull = full.toBool();
  }
  if (!readDevice(json.value(QLatin1String("embedding")).toObject(), QStringLiteral("embedding"), &p.embeddingDevice, &err) ||
      !readDevice(json.value(QLatin1String("head")).toObject(), QStringLiteral("head"), &p.headDevice, &err))
    return fail(err);

  QList<int> owner(nLayers, -1);  // entry index per block
  QList<QPair<int, int>> ranges;
  p.layers.resize(nLayers);
  const QJsonArray entries = json.value(QLatin1String("layers")).toArray();
  for (int e = 0; e < entries.size(); ++e) {
    const QJsonObject o = entries[e].toObject();
    const QString where = QStringLiteral("layers[%1]").arg(e);
    for (auto it = o.begin(); it != o.end(); ++it)
      if (!knownEntryFields().contains(it.key()))
        return fail(QStringLiteral("%1: unknown field '%2' (expected: layers, device, group, ratio, kv_device, ffn_device, experts)")
                        .arg(where, it.key()));
    int first = 0, last = 0;
    if (!parseRange(o.value(QLatin1String("layers")), &first, &last, &err)) return fail(where + QStringLiteral(": ") + err);
    if (last >= nLayers)
      return fail(QStringLiteral("%1: layers %2 out of range: the model has %3 layers (0-%4)")
                      .arg(where, rangeText(first, last)).arg(nLayers).arg(nLayers - 1));
    LayerTarget t;
    const bool hasDevice = o.contains(QLatin1String("device")), hasGroup = o.contains(QLatin1String("group"));
    if (hasDevice == hasGroup) return fail(where + QStringLiteral(": give either 'device' or 'group', not both"));
    if (hasDevice) {
      if (o.contains(QLatin1String("ratio")))
        return fail(where + QStringLiteral(": 'ratio' needs a 'group'; one 'device' takes no ratio"));
      t.devices << o.value(QLatin1String("device")).toString();
    } else {
      for (const QJsonValue& d : o.value(QLatin1String("group")).toArray()) {
        if (t.devices.contains(d.toString()))
          return fail(QStringLiteral("%1: device '%2' appears twice in the group").arg(where, d.toString()));
        t.devices << d.toString();
      }
      if (t.devices.size() < 2)
        return fail(QStringLiteral("%1: a 'group' needs at least 2 devices, has %2").arg(where).arg(t.devices.size()));
      const QJsonArray ratio = o.value(QLatin1String("ratio")).toArray();
      if (!ratio.isEmpty() && ratio.size() != t.devices.size())
        return fail(QStringLiteral("%1: 'ratio' has %2 values for a group of %3 devices")
                        .arg(where).arg(ratio.size()).arg(t.devices.size()));
      for (int i = 0; i < ratio.size(); ++i) {
        if (!ratio[i].isDouble()) return fail(QStringLiteral("%1: 'ratio'[%2] must be a number").arg(where).arg(i));
        if (ratio[i].toDouble() <= 0)
          return fail(QStringLiteral("%1: 'ratio'[%2] is %3 for device '%4'; ratios must be > 0")
                          .arg(where).arg(i).arg(ratio[i].toDouble()).arg(t.devices[i]));
        t.ratio << ratio[i].toDouble();
      }
    }
    t.kvDevice = o.value(QLatin1String("kv_device")).toString();
    if (o.contains(QLatin1String("ffn_device")) &&
        !readDeviceId(o.value(QLatin1String("ffn_device")), where + QStringLiteral(": 'ffn_device'"), &t.ffnDevice, &err))
      return fail(err);
    if (o.contains(QLatin1String("experts")) &&
        !parseExperts(o.value(QLatin1String("experts")), where + QStringLiteral(": 'experts'"), &t.experts, &err))
      return fail(err);
    for (int b = first; b <= last; ++b) {
      if (owner[b] >= 0)
        return fail(QStringLiteral("%1: layers %2 overlap layers %3 at layer %4")
                        .arg(where, rangeText(first, last),
                             rangeText(ranges[owner[b]].first, ranges[owner[b]].second))
                        .arg(b));
      owner[b] = e;
      p.layers[b] = t;
    }
    ranges.append({first, last});
  }
  for (int b = 0; b < nLayers; ++b) {
    if (owner[b] >= 0) continue;
    int end = b;
    while (end + 1 < nLayers && owner[end + 1] < 0) ++end;
    return fail(b == end ? QStringLiteral("layer %1 of %2 has no placement").arg(b).arg(nLayers)
                         : QStringLiteral("layers %1-%2 of %3 have no placement").arg(b).arg(end).arg(nLayers));
  }
  if (error) error->clear();
  return p;
}

QJsonObject PlacementData::toJson() const {
  QJsonObject j;
  j[QLatin1String("version")] = 1;
  j[QLatin1String("n_ctx")] = nCtx;
  j[QLatin1String("n_seq")] = nSeq;
  j[QLatin1String("max_batch")] = maxBatch;
  if (!kvType.isEmpty()) j[QLatin1String("kv_type")] = kvType;
  if (swaFull) j[QLatin1String("swa_full")] = true;  // false: the engine's default (a ring per window)
  j[QLatin1String("embedding")] = QJsonObject{{QLatin1String("device"), embeddingDevice}};
  j[QLatin1String("head")] = QJsonObject{{QLatin1String("device"), headDevice}};
  QJsonArray entries;
  for (int b = 0; b < layers.size();) {
    int end = b;
    while (end + 1 < layers.size() && layers[end + 1] == layers[b]) ++end;
    const LayerTarget& t = layers[b];
    QJsonObject e;
    e[QLatin1String("layers")] = b == end ? QJsonValue(b) : QJsonValue(rangeText(b, end));
    if (t.isGroup()) {
      e[QLatin1String("group")] = QJsonArray::fromStringList(t.devices);
      if (!t.ratio.isEmpty()) {
        QJsonArray r;
        for (double v : t.ratio) r.append(v == std::floor(v) && std::abs(v) < 1e15 ? QJsonValue(qint64(v)) : QJsonValue(v));
        e[QLatin1String("ratio")] = r;
      }
    } else {
      e[QLatin1String("device")] = t.devices.value(0);
    }
    if (!t.kvDevice.isEmpty()) e[QLatin1String("kv_device")] = t.kvDevice;
    if (!t.ffnDevice.isEmpty()) e[QLatin1String("ffn_device")] = t.ffnDevice;
    if (t.experts.size() == 1 && t.experts[0].begin == 0 && t.experts[0].end == kAllExperts) {
      e[QLatin1String("experts")] = t.experts[0].device;
    } else if (!t.experts.isEmpty()) {
      QJsonArray ranges;
      for (const ExpertRange& r : t.experts)
        ranges.append(QJsonObject{{QLatin1String("device"), r.device}, {QLatin1String("experts"), expertsText(r)}});
      e[QLatin1String("experts")] = ranges;
    }
    entries.append(e);
    b = end + 1;
  }
  j[QLatin1String("layers")] = entries;
  return j;
}

int changedTiles(const PlacementData& a, const PlacementData& b) {
  int n = (a.embeddingDevice != b.embeddingDevice) + (a.headDevice != b.headDevice);
  const int common = static_cast<int>(std::min(a.layers.size(), b.layers.size()));
  for (int i = 0; i < common; ++i) n += a.layers[i] == b.layers[i] ? 0 : 1;
  n += static_cast<int>(std::abs(a.layers.size() - b.layers.size()));
  return n;
}

}  // namespace strata::ui
