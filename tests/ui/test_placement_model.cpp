// tests/ui/test_placement_model.cpp — PlacementModel against the real engine (stories260K, a CPU and
// two small simulated GPUs): drops (tile to lane, range, tensor group, invalid drops), and after
// each the per-device bytes, shortfalls and predicted speed the model shows, which must equal the
// engine's own /strata/v1/placement/estimate answer for the same placement; the last answer shown
// until the next arrives; coalesced requests while a drag outpaces the engine; an unreachable
// engine; undo/redo; MIME payloads; the item-model tester.
#include <QAbstractItemModelTester>
#include <QJsonArray>
#include <QJsonDocument>
#include <QMimeData>
#include <QSignalSpy>
#include <QtTest>

#include "real_engine.h"
#include "ui/placement/placement_estimator.h"
#include "ui/placement/placement_model.h"

using namespace strata::ui;

namespace {

// stories260K: 5 blocks of 181,760 B (F32), embedding 131,072 B, head 131,328 B. gpu0 holds the
// embedding and two blocks with their KV at ctx 64 and the engine's scratch (about 1.3 MB in all),
// not the whole model (about 2 MB): its capacity is the midpoint of the engine's two totals
// (RealEngine::capacityBetween; the scratch follows this CPU's kernel paths). gpu1 (4 MiB) holds
// the head and three blocks.
const QString kDevices = QStringLiteral("cpu,sim:gpu0:%1,sim:gpu1:%2");
constexpr int kCtx = 64;

// embedding + blk 0-1 on gpu0, blk 2-4 + head on gpu1.
QJsonObject initialPlacement() {
  return QJsonDocument::fromJson(R"({"version":1,"n_ctx":64,"n_seq":1,"max_batch":256,
      "embedding":{"device":"gpu0"},"head":{"device":"gpu1"},
      "layers":[{"layers":"0-1","device":"gpu0"},{"layers":"2-4","device":"gpu1"}]})")
      .object();
}

QString layersJson(const QJsonObject& placement) {
  return QString::fromUtf8(QJsonDocument(placement.value("layers").toArray()).toJson(QJsonDocument::Compact));
}

// "gpu1", "cpu", "model", "group:gpu0,gpu1:1,1", "lane:99" -> column (adding a group lane if needed).
int laneColumn(PlacementModel& m, const QString& lane) {
  if (lane == "model") return 0;
  if (lane.startsWith("lane:")) return lane.mid(5).toInt();
  if (lane.startsWith("group:")) {
    const QStringList parts = lane.split(':');
    QList<double> ratio;
    for (const QString& r : parts[2].split(',')) ratio << r.toDouble();
    return m.addGroupLane(parts[1].split(','), ratio);
  }
  return m.laneOfDevice(lane);
}

}  // namespace

class TestPlacementModel : public QObject {
  Q_OBJECT
 private:
  RealEngine engine_;
  std::unique_ptr<EngineClient> client_;  // the estimator's, asynchronous like the GUI's
  std::unique_ptr<PlacementModel> model_;
  std::unique_ptr<QAbstractItemModelTester> tester_;
  std::unique_ptr<PlacementEstimator> estimator_;
  quint64 gpu0Capacity_ = 0;  // bytes, set by initTestCase

  // Waits until the figures shown are the engine's answer for the shown placement.
  bool waitCurrent() {
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < 30000 && (estimator_->busy() || !model_->estimateCurrent())) QTest::qWait(2);
    return model_->estimateCurrent() && !estimator_->busy();
  }

  // The model shows exactly what the engine answers for the placement shown.
  void compareWithEngine() {
    const QJsonObject shown = model_->estimatedPlacement();
    QString error;
    const EngineEstimate e = engine_.estimate(shown, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    for (const DeviceMemoryEstimate& want : e.memory) {
      const DeviceMemoryEstimate got = model_->memoryOf(want.device);
      QCOMPARE(got.weights, want.weights);
      QCOMPARE(got.kv, want.kv);
      QCOMPARE(got.scratch, want.scratch);
      QCOMPARE(got.overhead, want.overhead);
      QCOMPARE(got.total, want.total);
      QCOMPARE(got.capacity, want.capacity);
      QCOMPARE(got.fits, want.fits);
      QCOMPARE(got.shortfall, want.shortfall);
      const int lane = model_->laneOfDevice(want.device);
      QCOMPARE(model_->headerData(lane, Qt::Horizontal, PlacementModel::LaneTotalRole).toULongLong(), want.total);
      QCOMPARE(model_->headerData(lane, Qt::Horizontal, PlacementModel::LaneShortfallRole).toULongLong(), want.shortfall);
      QCOMPARE(model_->headerData(lane, Qt::Horizontal, PlacementModel::LaneFitsRole).toBool(), want.fits);
    }
    QCOMPARE(model_->fits(), e.fits);
    QCOMPARE(model_->estimateError(), e.error);
    QVERIFY(e.hasCost);
    QCOMPARE(model_->prediction().decodeTokensPerS, e.cost.decodeTokensPerS);
    QCOMPARE(model_->prediction().decodeMsPerToken, e.cost.decodeMsPerToken);
    QCOMPARE(model_->prediction().prefillTokensPerS, e.cost.prefillTokensPerS);
    QCOMPARE(model_->prediction().boundaries, e.cost.boundaries);
    QCOMPARE(model_->prediction().transferBytesPerToken, e.cost.transferBytesPerToken);
    QVERIFY(e.cost.decodeTokensPerS > 0);
  }

 private slots:
  void initTestCase() {
    const QString failed = engine_.startWithCapacityBetween(
        kDevices.arg(QStringLiteral("64MiB"), QStringLiteral("4MiB")), kDevices.arg(QStringLiteral("%1"), QStringLiteral("4MiB")),
        kCtx, "gpu0", initialPlacement(), RealEngine::everythingOn(initialPlacement(), "gpu0", 5), &gpu0Capacity_);
    if (!failed.isEmpty()) QFAIL(qPrintable(failed));
    QCOMPARE(engine_.modelJson().value("n_layers").toInt(), 5);
  }

  void init() {
    client_ = std::make_unique<EngineClient>();
    client_->setEndpoint(engine_.url(), engine_.apiKey());
    model_ = std::make_unique<PlacementModel>();
    tester_ = std::make_unique<QAbstractItemModelTester>(model_.get(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    estimator_ = std::make_unique<PlacementEstimator>(client_.get(), model_.get());
    model_->setDevices(engine_.devicesJson());
    model_->setModelInfo(engine_.modelJson());
    QString error;
    QVERIFY2(model_->resetPlacement(initialPlacement(), &error), qPrintable(error));
    QVERIFY(waitCurrent());
  }

  void cleanup() {
    estimator_.reset();
    tester_.reset();
    model_.reset();
    client_.reset();
  }

  void initialFigures() {
    QCOMPARE(model_->rowCount(), 7);     // embedding, blk 0-4, head
    QCOMPARE(model_->columnCount(), 4);  // model, cpu, gpu0, gpu1
    compareWithEngine();
    QVERIFY(model_->fits());
    QCOMPARE(model_->memoryOf("cpu").total, 0ull);  // nothing placed there
    QVERIFY(!model_->memoryOf("cpu").used);
    QCOMPARE(model_->memoryOf("gpu0").weights, 131072ull + 2 * 181760ull);
    QCOMPARE(model_->applyBlocker(), QString("nothing moved"));
    QCOMPARE(model_->data(model_->index(2, 2), PlacementModel::PlacedRole).toBool(), true);   // blk 1 on gpu0
    QCOMPARE(model_->data(model_->index(2, 3), PlacementModel::PlacedRole).toBool(), false);
    QCOMPARE(model_->data(model_->index(6, 0)).toString(), QString("head"));
    QCOMPARE(model_->data(model_->index(1, 0), PlacementModel::TileBytesRole).toULongLong(), 181760ull);
  }

  void drop_data() {
    QTest::addColumn<QString>("lane");
    QTest::addColumn<int>("firstTile");
    QTest::addColumn<int>("lastTile");
    QTest::addColumn<bool>("accepted");
    QTest::addColumn<QString>("layers");   // expected "layers" array of the placement
    QTest::addColumn<QString>("overflow"); // the device that no longer fits ("" when all fit)
    QTest::addColumn<QString>("error");    // part of the rejection message

    const QString initial = R"([{"device":"gpu0","layers":"0-1"},{"device":"gpu1","layers":"2-4"}])";
    QTest::newRow("tile to lane") << "cpu" << 2 << 2 << true
                                  << R"([{"device":"gpu0","layers":0},{"device":"cpu","layers":1},{"device":"gpu1","layers":"2-4"}])"
                                  << "" << "";
    QTest::newRow("range") << "gpu0" << 3 << 6 << true << R"([{"device":"gpu0","layers":"0-4"}])" << "gpu0" << "";
    QTest::newRow("tensor group") << "group:gpu0,gpu1:1,1" << 1 << 2 << true
                                  << R"([{"group":["gpu0","gpu1"],"layers":"0-1","ratio":[1,1]},{"device":"gpu1","layers":"2-4"}])"
                                  << "" << "";
    QTest::newRow("onto the model column") << "model" << 2 << 2 << false << initial << "" << "not onto the model column";
    QTest::newRow("range past the end") << "gpu0" << 4 << 8 << false << initial << ""
                                        << "tiles 3-7 out of range: the model has 5 layers (0-4)";
    QTest::newRow("group of one device") << "group:gpu0:1" << 1 << 1 << false << initial << ""
                                         << "a 'group' needs at least 2 devices, has 1";
    QTest::newRow("embedding into a group") << "group:gpu0,gpu1:1,1" << 0 << 1 << false << initial << ""
                                            << "the embedding must be on one device, not a group of 2 (gpu0, gpu1)";
    QTest::newRow("no such lane") << "lane:99" << 1 << 1 << false << initial << "" << "column 99 does not exist";
    QTest::newRow("nothing moves") << "gpu0" << 1 << 2 << false << initial << "" << "nothing moves";
  }

  void drop() {
    QFETCH(QString, lane);
    QFETCH(int, firstTile);
    QFETCH(int, lastTile);
    QFETCH(bool, accepted);
    QFETCH(QString, layers);
    QFETCH(QString, overflow);
    QFETCH(QString, error);

    const QJsonObject before = model_->placementJson();
    const int column = laneColumn(*model_, lane);
    QSignalSpy rejected(model_.get(), &PlacementModel::editRejected);
    std::unique_ptr<QMimeData> mime(PlacementModel::makeMime(firstTile, lastTile));
    const QModelIndex target = model_->index(1, column);  // invalid for a missing column
    QCOMPARE(model_->canDropMimeData(mime.get(), Qt::MoveAction, -1, column, target), accepted);
    QCOMPARE(model_->dropMimeData(mime.get(), Qt::MoveAction, -1, column, target), accepted);
    QCOMPARE(layersJson(model_->placementJson()), layers);
    QVERIFY(waitCurrent());
    compareWithEngine();
    for (const QString& id : {QStringLiteral("cpu"), QStringLiteral("gpu0"), QStringLiteral("gpu1")})
      QCOMPARE(model_->memoryOf(id).fits, id != overflow);
    if (!accepted) {
      QCOMPARE(rejected.count(), 1);
      QVERIFY2(model_->lastError().contains(error), qPrintable(model_->lastError()));
      QCOMPARE(model_->undoStack()->count(), 0);
      QCOMPARE(model_->placementJson(), before);
      return;
    }
    QCOMPARE(model_->undoStack()->count(), 1);
    // Apply is refused with the engine's reason when a device overflows.
    QCOMPARE(model_->applyBlocker(), overflow.isEmpty() ? QString() : model_->estimateError());
    if (!overflow.isEmpty()) QVERIFY2(model_->applyBlocker().contains("'" + overflow + "'"), qPrintable(model_->applyBlocker()));

    // Undo restores the placement and, once answered, the engine's figures for it; redo brings the drop back.
    const QJsonObject after = model_->placementJson();
    const quint64 gpu1After = model_->memoryOf("gpu1").total;
    model_->undoStack()->undo();
    QCOMPARE(model_->placementJson(), before);
    QVERIFY(waitCurrent());
    compareWithEngine();
    QVERIFY(model_->fits());
    model_->undoStack()->redo();
    QCOMPARE(model_->placementJson(), after);
    QVERIFY(waitCurrent());
    QCOMPARE(model_->memoryOf("gpu1").total, gpu1After);
  }

  void lastAnswerShownUntilTheNext() {
    const DeviceMemoryEstimate gpu0 = model_->memoryOf("gpu0");
    const double tokensPerS = model_->prediction().decodeTokensPerS;
    QVERIFY(model_->setKvDeviceForAll("cpu"));
    // Asked, not answered yet: the previous figures stay, marked as not current.
    QVERIFY(estimator_->busy());
    QVERIFY(!model_->estimateCurrent());
    QCOMPARE(model_->memoryOf("gpu0").total, gpu0.total);
    QCOMPARE(model_->prediction().decodeTokensPerS, tokensPerS);
    QCOMPARE(model_->applyBlocker(), QString("waiting for the engine's estimate"));
    QVERIFY(waitCurrent());
    compareWithEngine();
    QCOMPARE(model_->memoryOf("gpu0").kv, 0ull);  // every block's KV is on the CPU now
    QVERIFY(model_->memoryOf("cpu").kv > 0);
    QCOMPARE(model_->memoryOf("gpu0").weights, gpu0.weights);
  }

  void lateAnswerForALeftPlacementIsDropped() {
    // An edit asks; undoing it at once returns to the placement already estimated: its figures
    // stay current, and the late answer for the undone edit does not replace them.
    const int sent = estimator_->requestsSent();
    const QJsonObject before = model_->placementJson();
    const quint64 gpu0 = model_->memoryOf("gpu0").total;
    QVERIFY(model_->setKvDeviceForAll("cpu"));
    model_->undoStack()->undo();
    QVERIFY(model_->estimateCurrent());
    QVERIFY(waitCurrent());
    QCOMPARE(estimator_->requestsSent() - sent, 1);
    QCOMPARE(model_->estimatedPlacement(), before);
    QCOMPARE(model_->memoryOf("gpu0").total, gpu0);
    compareWithEngine();
  }

  void dragOutpacingTheEngineIsCoalesced() {
    // Twenty hover moves between two lanes before the event loop runs: one request goes out at
    // once, the others collapse into one (the last), sent when the first is answered.
    const int sent = estimator_->requestsSent();
    QString error;
    std::unique_ptr<QMimeData> mime(PlacementModel::makeMime(2, 3));
    const PlacementEdit toCpu = model_->editFromMime(mime.get(), model_->laneOfDevice("cpu"), &error);
    const PlacementEdit toGpu1 = model_->editFromMime(mime.get(), model_->laneOfDevice("gpu1"), &error);
    QVERIFY(error.isEmpty());
    for (int i = 0; i < 20; ++i) model_->previewEdit(i % 2 ? toCpu : toGpu1);  // ends on cpu
    QVERIFY(model_->isPreviewing());
    QVERIFY(waitCurrent());
    QCOMPARE(estimator_->requestsSent() - sent, 2);
    QCOMPARE(model_->estimatedPlacement(), applyEdit(toCpu, model_->placement()).toJson());
    compareWithEngine();
    QVERIFY(model_->memoryOf("cpu").weights >= 2 * 181760ull);
    // Dropping what the hover showed needs no new request: the preview's answer is the drop's.
    QVERIFY(model_->dropMimeData(mime.get(), Qt::MoveAction, -1, model_->laneOfDevice("cpu"), {}));
    QVERIFY(!model_->isPreviewing());
    QVERIFY(model_->estimateCurrent());
    QCOMPARE(estimator_->requestsSent() - sent, 2);
    QCOMPARE(model_->applyBlocker(), QString());
  }

  void unreachableEngine() {
    // Nothing listens on this port: the editor says so, shows no figures and refuses Apply.
    client_->setEndpoint(QUrl(QStringLiteral("http://127.0.0.1:%1").arg(EngineProcess::freeLoopbackPort())), QString());
    QTRY_VERIFY_WITH_TIMEOUT(!model_->estimateUnavailable().isEmpty(), 30000);
    QVERIFY(!model_->hasEstimate());
    QCOMPARE(model_->memoryOf("gpu0").total, 0ull);
    QCOMPARE(model_->memoryOf("gpu0").capacity, gpu0Capacity_);
    QVERIFY2(model_->applyBlocker().startsWith("no estimate from the engine: "), qPrintable(model_->applyBlocker()));
    // Back to the engine: asked again at once.
    client_->setEndpoint(engine_.url(), engine_.apiKey());
    QVERIFY(waitCurrent());
    QVERIFY(model_->estimateUnavailable().isEmpty());
    compareWithEngine();
  }

  void engineRejectsUnknownDevice() {
    // The editor's device list names a device the engine does not have (planning mode before the
    // engine restarted with the declared devices): the engine's refusal is what the editor shows.
    QJsonArray devices = engine_.devicesJson();
    devices.append(QJsonObject{{"id", "gpu7"}, {"kind", "sim"}, {"simulated", true}, {"bytes_total", 1e9}});
    model_->setDevices(devices);
    QVERIFY(waitCurrent());
    std::unique_ptr<QMimeData> mime(PlacementModel::makeMime(1, 1));
    QVERIFY(model_->dropMimeData(mime.get(), Qt::MoveAction, -1, model_->laneOfDevice("gpu7"), {}));
    QVERIFY(waitCurrent());
    QVERIFY(!model_->fits());
    QVERIFY(!model_->hasPrediction());
    QVERIFY2(model_->applyBlocker().contains("gpu7"), qPrintable(model_->applyBlocker()));
    QCOMPARE(model_->applyBlocker(), model_->estimateError());
  }

  void mimeFromSelection() {
    // A shift-selected range of the model column: rows 2..4 (blk 1-3).
    const QModelIndexList rows{model_->index(3, 0), model_->index(2, 0), model_->index(4, 0)};
    std::unique_ptr<QMimeData> mime(model_->mimeData(rows));
    QVERIFY(mime->hasFormat("application/x-strata-layers"));
    const QJsonObject o = QJsonDocument::fromJson(mime->data("application/x-strata-layers")).object();
    QCOMPARE(o.value("first_tile").toInt(), 2);
    QCOMPARE(o.value("last_tile").toInt(), 4);
    QVERIFY(model_->flags(model_->index(2, 0)) & Qt::ItemIsDragEnabled);
    QVERIFY(!(model_->flags(model_->index(2, 1)) & Qt::ItemIsDragEnabled));  // blk 1 is not on the cpu
  }

  void previewWhileHovering() {
    QString error;
    const PlacementEdit e = model_->editFromMime(std::unique_ptr<QMimeData>(PlacementModel::makeMime(1, 2)).get(),
                                                 model_->laneOfDevice("cpu"), &error);
    QVERIFY(error.isEmpty());
    model_->previewEdit(e);
    QVERIFY(model_->isPreviewing());
    QVERIFY(waitCurrent());
    compareWithEngine();
    QCOMPARE(model_->memoryOf("cpu").weights, 2 * 181760ull);  // 2 blocks
    QCOMPARE(model_->undoStack()->count(), 0);                  // nothing applied
    QCOMPARE(model_->applyBlocker(), QString("nothing moved")); // Apply judges the placement, not the preview
    model_->clearPreview();
    QVERIFY(waitCurrent());
    QCOMPARE(model_->memoryOf("cpu").total, 0ull);
  }

  void kvOnCpuAndContext() {
    QVERIFY(model_->setKvDeviceForAll("cpu"));
    QVERIFY(waitCurrent());
    const quint64 kv = model_->memoryOf("cpu").kv;
    QVERIFY(kv > 0);
    QVERIFY(model_->setContext(2 * kCtx, 2));  // KV x 4
    QVERIFY(waitCurrent());
    compareWithEngine();
    QCOMPARE(model_->memoryOf("cpu").kv, 4 * kv);
    QCOMPARE(model_->changedTileCount(), 6);  // 5 blocks' KV + the context
    model_->undoStack()->undo();
    model_->undoStack()->undo();
    QCOMPARE(model_->placementJson(), initialPlacement());
  }

  void setPlacementUndoableAndChecked() {
    QJsonObject p = initialPlacement();
    p["layers"] = QJsonArray{QJsonObject{{"layers", "0-4"}, {"device", "cpu"}}};
    QVERIFY(model_->setPlacement(p));
    QVERIFY(waitCurrent());
    compareWithEngine();
    QCOMPARE(model_->memoryOf("cpu").weights, 5 * 181760ull);
    QCOMPARE(model_->changedTileCount(), 5);
    QCOMPARE(model_->applyBlocker(), QString());
    model_->undoStack()->undo();
    QCOMPARE(model_->placementJson(), initialPlacement());

    p["layers"] = QJsonArray{QJsonObject{{"layers", "0-4"}, {"device", "gpu7"}}};
    QString error;
    QVERIFY(!model_->setPlacement(p, &error));
    QCOMPARE(error, QString("layer 0: placement names device 'gpu7', which is not among: cpu, gpu0, gpu1"));
    p["layers"] = QJsonArray{QJsonObject{{"layers", "0-3"}, {"device", "cpu"}}};
    QVERIFY(!model_->setPlacement(p, &error));
    QCOMPARE(error, QString("layer 4 of 5 has no placement"));
  }
};

QTEST_MAIN(TestPlacementModel)
#include "test_placement_model.moc"
