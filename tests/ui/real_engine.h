// tests/ui/real_engine.h — the real `strata-engine serve` (this build's, or $STRATA_ENGINE) as a child
// process with stories260K from the shared models folder and the devices a test declares, for UI
// tests whose figures must be the engine's. Synchronous helpers for the test's own requests (the
// code under test uses its own EngineClient, asynchronously). Header-only, no moc.
#pragma once

#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonObject>
#include <QTest>

#include <memory>

#include "ui/client/engine_client.h"
#include "ui/client/engine_process.h"
#include "ui/placement/placement_estimate.h"

class RealEngine {
 public:
  static QString binary() { return qEnvironmentVariable("STRATA_ENGINE", QStringLiteral(STRATA_ENGINE_BINARY)); }
  static QString modelPath() { return QStringLiteral(STRATA_SHARED_MODELS_DIR "/stories260K.gguf"); }

  // Starts the engine with `devices` (a --devices spec) and waits until it serves the model
  // (stories260K unless `model` names another file). Returns an empty string on success, else what
  // went wrong (the test fails with it).
  QString start(const QString& devices, int ctx, const QString& model = modelPath()) {
    if (!QFile::exists(model))
      return model == modelPath()
                 ? QStringLiteral("stories260K.gguf is not in the shared models folder (setup puts it beside the checkout)")
                 : QStringLiteral("no model file '%1'").arg(model);
    client_ = std::make_unique<EngineClient>();
    process_ = std::make_unique<EngineProcess>(client_.get());
    EngineProcess::Options o;
    o.program = binary();
    o.devices = devices;
    o.ctx = ctx;
    o.threads = 1;
    process_->setOptions(o);
    process_->setModel(model);
    process_->start();
    QElapsedTimer t;
    t.start();
    while (process_->state() != EngineProcess::State::Ready && t.elapsed() < 60000) QTest::qWait(20);
    if (process_->state() != EngineProcess::State::Ready)
      return QStringLiteral("the engine did not become ready: %1\n%2").arg(process_->lastError(), process_->recentOutput());
    status_ = request("GET", QStringLiteral("/strata/v1/status"), QJsonValue::Undefined).object();
    devices_ = request("GET", QStringLiteral("/strata/v1/devices"), QJsonValue::Undefined).object().value("devices").toArray();
    if (status_.value("model").toObject().value("n_layers").toInt() <= 0) return QStringLiteral("the engine has no model");
    return {};
  }

  EngineClient* client() const { return client_.get(); }
  QUrl url() const { return client_->baseUrl(); }
  QString apiKey() const { return client_->apiKey(); }
  QJsonObject status() const { return status_; }
  QJsonObject modelJson() const { return status_.value("model").toObject(); }
  QJsonArray devicesJson() const { return devices_; }

  // One request, waited for.
  EngineResult request(const QByteArray& verb, const QString& path, const QJsonValue& body) {
    EngineResult result;
    bool done = false;
    client_->send(verb, path, body, nullptr, [&](const EngineResult& r) {
      result = r;
      done = true;
    });
    QElapsedTimer t;
    t.start();
    while (!done && t.elapsed() < 30000) QTest::qWait(5);
    if (!done) result.error = QStringLiteral("no answer in 30 s");
    return result;
  }

  // The engine's own estimate of `placement`, parsed as the editor parses it.
  strata::ui::EngineEstimate estimate(const QJsonObject& placement, QString* error = nullptr) {
    const EngineResult r = request("POST", QStringLiteral("/strata/v1/placement/estimate"), placement);
    strata::ui::EngineEstimate e = strata::ui::parseEstimate(r.object(), strata::ui::DeviceSpec::listFromJson(devices_));
    if (!r.ok()) {
      e.fits = false;
      e.error = r.error;
    }
    if (error) *error = r.ok() ? QString() : r.error;
    return e;
  }

  // A capacity for device `id` that holds placement `fits` and not `overflows`: the midpoint of the
  // engine's two totals for that device. The scratch the engine reserves follows the CPU kernels'
  // paths (kernels::matmul_scratch_bound), so a fixed capacity can hold on one machine and not on
  // another; a test that needs "fits here, overflows there" asks for its capacity this way, with the
  // engine started on a device large enough for both. 0 (and *error) when the engine cannot say, or
  // when `overflows` does not need more than `fits`.
  quint64 capacityBetween(const QString& id, const QJsonObject& fits, const QJsonObject& overflows, QString* error) {
    const auto totalOn = [&](const QJsonObject& placement, quint64* total) {
      QString failed;
      const strata::ui::EngineEstimate e = estimate(placement, &failed);
      if (!failed.isEmpty()) {
        *error = failed;
        return false;
      }
      for (const strata::ui::DeviceMemoryEstimate& m : e.memory)
        if (m.device == id) {
          *total = m.total;
          return true;
        }
      *error = QStringLiteral("the engine's estimate has no device '%1'").arg(id);
      return false;
    };
    quint64 small = 0, large = 0;
    if (!totalOn(fits, &small) || !totalOn(overflows, &large)) return 0;
    if (large <= small) {
      *error = QStringLiteral("device '%1' needs %2 B for the larger placement, not more than %3 B").arg(id).arg(large).arg(small);
      return 0;
    }
    return small + (large - small) / 2;
  }

  // Starts the engine twice: first with `probeDevices` (device `id` large enough for both
  // placements) to ask for the capacity between `fits` and `overflows` (capacityBetween), then with
  // `devices`, whose %1 is that capacity in bytes. Empty on success, else what went wrong.
  QString startWithCapacityBetween(const QString& probeDevices, const QString& devices, int ctx, const QString& id,
                                   const QJsonObject& fits, const QJsonObject& overflows, quint64* capacity) {
    QString failed = start(probeDevices, ctx);
    if (!failed.isEmpty()) return failed;
    *capacity = capacityBetween(id, fits, overflows, &failed);
    if (*capacity == 0) return failed;
    return start(devices.arg(*capacity), ctx);
  }

  // `placement` with the head and every block (0..n_layers-1) on `device`.
  static QJsonObject everythingOn(QJsonObject placement, const QString& device, int n_layers) {
    placement["head"] = QJsonObject{{"device", device}};
    placement["layers"] =
        QJsonArray{QJsonObject{{"layers", QStringLiteral("0-%1").arg(n_layers - 1)}, {"device", device}}};
    return placement;
  }

 private:
  std::unique_ptr<EngineClient> client_;
  std::unique_ptr<EngineProcess> process_;
  QJsonObject status_;
  QJsonArray devices_;
};
