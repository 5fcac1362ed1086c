// tests/ui/test_placement_model.cpp — PlacementModel drops (tile to lane, range, tensor group,
// invalid drops), exact per-device bytes and shortfalls, undo/redo, MIME payloads, model tester.
#include <QAbstractItemModelTester>
#include <QJsonArray>
#include <QJsonDocument>
#include <QMimeData>
#include <QSignalSpy>
#include <QtTest>

#include "ui/placement/placement_model.h"

using namespace strata::ui;

namespace {

// 4 blocks of 1000 B, embedding 500 B, head 600 B, KV 2 B per position -> 200 B per block at ctx 100,
// scratch 50 B per computing device.
QJsonObject modelInfo() {
  return QJsonObject{{"name", "toy"},
                     {"n_layers", 4},
                     {"layer_bytes", QJsonArray{1000, 1000, 1000, 1000}},
                     {"embedding_bytes", 500},
                     {"head_bytes", 600},
                     {"kv_bytes_per_token", 2},
                     {"n_embd", 8},
                     {"scratch_bytes", 50}};
}

QJsonArray devices() {
  return QJsonArray{
      QJsonObject{{"id", "cpu"}, {"kind", "cpu"}, {"name", "CPU"}, {"simulated", false}, {"bytes_total", 100000}, {"bandwidth_gbps", 50}},
      QJsonObject{{"id", "gpu0"}, {"kind", "sim"}, {"name", "sim-gpu0"}, {"simulated", true}, {"bytes_total", 3000}, {"bandwidth_gbps", 1000}},
      QJsonObject{{"id", "gpu1"}, {"kind", "sim"}, {"name", "sim-gpu1"}, {"simulated", true}, {"bytes_total", 4000}, {"bandwidth_gbps", 500}}};
}

// embedding + blk 0-1 on gpu0, blk 2-3 + head on gpu1: gpu0 2950 B, gpu1 3050 B, both fit.
QJsonObject initialPlacement() {
  return QJsonDocument::fromJson(R"({"version":1,"n_ctx":100,"n_seq":1,"max_batch":256,
      "embedding":{"device":"gpu0"},"head":{"device":"gpu1"},
      "layers":[{"layers":"0-1","device":"gpu0"},{"layers":"2-3","device":"gpu1"}]})")
      .object();
}

QString layersJson(const QJsonObject& placement) {
  return QString::fromUtf8(QJsonDocument(placement.value("layers").toArray()).toJson(QJsonDocument::Compact));
}

// "gpu1", "cpu", "model", "group:gpu0,gpu1:2,1", "lane:99" -> column (adding a group lane if needed).
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

using Bytes = QList<quint64>;

}  // namespace

class TestPlacementModel : public QObject {
  Q_OBJECT
 private:
  std::unique_ptr<PlacementModel> model_;
  std::unique_ptr<QAbstractItemModelTester> tester_;

 private slots:
  void init() {
    model_ = std::make_unique<PlacementModel>();
    tester_ = std::make_unique<QAbstractItemModelTester>(model_.get(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    model_->setDevices(devices());
    model_->setModelInfo(modelInfo());
    QString error;
    QVERIFY2(model_->resetPlacement(initialPlacement(), &error), qPrintable(error));
  }

  void initialFigures() {
    QCOMPARE(model_->rowCount(), 6);     // embedding, blk 0-3, head
    QCOMPARE(model_->columnCount(), 4);  // model, cpu, gpu0, gpu1
    QCOMPARE(model_->memoryOf("gpu0").weights, 2500ull);
    QCOMPARE(model_->memoryOf("gpu0").kv, 400ull);
    QCOMPARE(model_->memoryOf("gpu0").total, 2950ull);
    QCOMPARE(model_->memoryOf("gpu1").total, 3050ull);
    QCOMPARE(model_->memoryOf("cpu").total, 0ull);
    QVERIFY(model_->fits());
    QCOMPARE(model_->applyBlocker(), QString("nothing moved"));
    QCOMPARE(model_->data(model_->index(2, 2), PlacementModel::PlacedRole).toBool(), true);   // blk 1 on gpu0
    QCOMPARE(model_->data(model_->index(2, 3), PlacementModel::PlacedRole).toBool(), false);
    QCOMPARE(model_->data(model_->index(5, 0)).toString(), QString("head"));
    QCOMPARE(model_->headerData(3, Qt::Horizontal, PlacementModel::LaneTotalRole).toULongLong(), 3050ull);
  }

  void drop_data() {
    QTest::addColumn<QString>("lane");
    QTest::addColumn<int>("firstTile");
    QTest::addColumn<int>("lastTile");
    QTest::addColumn<bool>("accepted");
    QTest::addColumn<QString>("layers");   // expected "layers" array of the placement
    QTest::addColumn<Bytes>("totals");     // cpu, gpu0, gpu1
    QTest::addColumn<Bytes>("shortfalls");
    QTest::addColumn<QString>("error");    // part of the rejection message

    const QString initial = R"([{"device":"gpu0","layers":"0-1"},{"device":"gpu1","layers":"2-3"}])";
    const Bytes initialTotals{0, 2950, 3050}, none{0, 0, 0};

    // blk 1 -> cpu: cpu 1000 + KV 200 + scratch 50; gpu0 keeps embedding + blk 0.
    QTest::newRow("tile to lane") << "cpu" << 2 << 2 << true
                                  << R"([{"device":"gpu0","layers":0},{"device":"cpu","layers":1},{"device":"gpu1","layers":"2-3"}])"
                                  << Bytes{1250, 1750, 3050} << none << "";
    // blk 0-1 -> gpu1: gpu1 4 blocks + head + 4 KV + scratch = 5450 > 4000; gpu0 only the embedding (no scratch).
    QTest::newRow("range") << "gpu1" << 1 << 2 << true << R"([{"device":"gpu1","layers":"0-3"}])"
                           << Bytes{0, 500, 5450} << Bytes{0, 0, 1450} << "";
    // blk 3 + head -> gpu0: 500 + 3000 + 600 + KV 600 + 50 = 4750 > 3000.
    QTest::newRow("range with head") << "gpu0" << 4 << 5 << true
                                     << R"([{"device":"gpu0","layers":"0-1"},{"device":"gpu1","layers":2},{"device":"gpu0","layers":3}])"
                                     << Bytes{0, 4750, 1250} << Bytes{0, 1750, 0} << "";
    // blk 0-1 -> group gpu0+gpu1 2:1: each block 666 / 334 B, KV 133 / 67 B.
    QTest::newRow("tensor group") << "group:gpu0,gpu1:2,1" << 1 << 2 << true
                                  << R"([{"group":["gpu0","gpu1"],"layers":"0-1","ratio":[2,1]},{"device":"gpu1","layers":"2-3"}])"
                                  << Bytes{0, 500 + 2 * 666 + 2 * 133 + 50, 2 * 334 + 2 * 67 + 2000 + 600 + 400 + 50}
                                  << none << "";
    QTest::newRow("onto the model column") << "model" << 2 << 2 << false << initial << initialTotals << none
                                           << "not onto the model column";
    QTest::newRow("range past the end") << "gpu0" << 4 << 7 << false << initial << initialTotals << none
                                        << "tiles 3-6 out of range: the model has 4 layers (0-3)";
    QTest::newRow("group of one device") << "group:gpu0:1" << 1 << 1 << false << initial << initialTotals << none
                                         << "a 'group' needs at least 2 devices, has 1";
    QTest::newRow("embedding into a group") << "group:gpu0,gpu1:1,1" << 0 << 1 << false << initial << initialTotals
                                            << none << "the embedding must be on one device, not a group of 2 (gpu0, gpu1)";
    QTest::newRow("no such lane") << "lane:99" << 1 << 1 << false << initial << initialTotals << none
                                  << "column 99 does not exist";
    QTest::newRow("nothing moves") << "gpu0" << 1 << 2 << false << initial << initialTotals << none << "nothing moves";
  }

  void drop() {
    QFETCH(QString, lane);
    QFETCH(int, firstTile);
    QFETCH(int, lastTile);
    QFETCH(bool, accepted);
    QFETCH(QString, layers);
    QFETCH(Bytes, totals);
    QFETCH(Bytes, shortfalls);
    QFETCH(QString, error);

    const QJsonObject before = model_->placementJson();
    const int column = laneColumn(*model_, lane);
    QSignalSpy rejected(model_.get(), &PlacementModel::editRejected);
    std::unique_ptr<QMimeData> mime(PlacementModel::makeMime(firstTile, lastTile));
    const QModelIndex target = model_->index(1, column);  // invalid for a missing column
    QCOMPARE(model_->canDropMimeData(mime.get(), Qt::MoveAction, -1, column, target), accepted);
    QCOMPARE(model_->dropMimeData(mime.get(), Qt::MoveAction, -1, column, target), accepted);

    QCOMPARE(layersJson(model_->placementJson()), layers);
    const QStringList ids{"cpu", "gpu0", "gpu1"};
    for (int i = 0; i < ids.size(); ++i) {
      const DeviceMemoryEstimate m = model_->memoryOf(ids[i]);
      QCOMPARE(m.total, totals[i]);
      QCOMPARE(m.shortfall, shortfalls[i]);
      QCOMPARE(m.fits, shortfalls[i] == 0);
      QCOMPARE(model_->headerData(model_->laneOfDevice(ids[i]), Qt::Horizontal, PlacementModel::LaneShortfallRole).toULongLong(),
               shortfalls[i]);
    }
    if (!accepted) {
      QCOMPARE(rejected.count(), 1);
      QVERIFY2(model_->lastError().contains(error), qPrintable(model_->lastError()));
      QCOMPARE(model_->undoStack()->count(), 0);
      QCOMPARE(model_->placementJson(), before);
      return;
    }
    QCOMPARE(model_->undoStack()->count(), 1);
    const bool overflow = std::any_of(shortfalls.begin(), shortfalls.end(), [](quint64 s) { return s > 0; });
    QCOMPARE(model_->applyBlocker().contains("short"), overflow);
    QCOMPARE(model_->applyBlocker().isEmpty(), !overflow);

    // Undo restores the placement and the figures exactly; redo brings the drop back.
    const QJsonObject after = model_->placementJson();
    model_->undoStack()->undo();
    QCOMPARE(model_->placementJson(), before);
    QCOMPARE(model_->memoryOf("gpu0").total, 2950ull);
    QCOMPARE(model_->memoryOf("gpu1").total, 3050ull);
    model_->undoStack()->redo();
    QCOMPARE(model_->placementJson(), after);
    QCOMPARE(model_->memoryOf("gpu1").total, totals[2]);
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
    QSignalSpy changed(model_.get(), &PlacementModel::estimateChanged);
    model_->previewEdit(e);
    QVERIFY(model_->isPreviewing());
    QCOMPARE(model_->memoryOf("cpu").total, 2450ull);  // 2 blocks + 2 KV + scratch
    QCOMPARE(model_->undoStack()->count(), 0);          // nothing applied
    model_->clearPreview();
    QCOMPARE(model_->memoryOf("cpu").total, 0ull);
    QCOMPARE(changed.count(), 2);
  }

  void kvOnCpuAndContext() {
    QVERIFY(model_->setKvDeviceForAll("cpu"));
    QCOMPARE(model_->memoryOf("cpu").kv, 800ull);
    QCOMPARE(model_->memoryOf("cpu").scratch, 0ull);  // holds KV only
    QCOMPARE(model_->memoryOf("gpu0").total, 2550ull);
    QVERIFY(model_->setContext(200, 2));  // KV x 4
    QCOMPARE(model_->memoryOf("cpu").kv, 3200ull);
    QCOMPARE(model_->changedTileCount(), 5);  // 4 blocks' KV + the context
    model_->undoStack()->undo();
    model_->undoStack()->undo();
    QCOMPARE(model_->placementJson(), initialPlacement());
  }

  void setPlacementUndoableAndChecked() {
    QJsonObject p = initialPlacement();
    p["layers"] = QJsonArray{QJsonObject{{"layers", "0-3"}, {"device", "cpu"}}};
    QVERIFY(model_->setPlacement(p));
    QCOMPARE(model_->memoryOf("cpu").total, 4000ull + 800 + 50);
    QCOMPARE(model_->changedTileCount(), 4);  // blk 0-1 moved off gpu0, blk 2-3 off gpu1
    QCOMPARE(model_->applyBlocker(), QString());
    model_->undoStack()->undo();
    QCOMPARE(model_->placementJson(), initialPlacement());

    p["layers"] = QJsonArray{QJsonObject{{"layers", "0-3"}, {"device", "gpu7"}}};
    QString error;
    QVERIFY(!model_->setPlacement(p, &error));
    QCOMPARE(error, QString("layer 0: placement names device 'gpu7', which is not among: cpu, gpu0, gpu1"));
    p["layers"] = QJsonArray{QJsonObject{{"layers", "0-2"}, {"device", "cpu"}}};
    QVERIFY(!model_->setPlacement(p, &error));
    QCOMPARE(error, QString("layer 3 of 4 has no placement"));
  }
};

QTEST_MAIN(TestPlacementModel)
#include "test_placement_model.moc"
