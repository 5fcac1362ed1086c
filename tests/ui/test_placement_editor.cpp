// tests/ui/test_placement_editor.cpp — the editor panel against the real engine (stories260K, a CPU
// and two small simulated GPUs): drops through the view (synthesized QDragMoveEvent/QDropEvent),
// hover preview, the lane figures, predicted speed and Apply's refusal on overflow all being the
// engine's answer for the placement shown, auto-plan signals and plan results, save/load, planning
// mode with declared devices.
#include <QDragMoveEvent>
#include <QDropEvent>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QMimeData>
#include <QPushButton>
#include <QTemporaryDir>
#include <QtTest>

#include "real_engine.h"
#include "ui/devices/memory_bar.h"
#include "ui/placement/placement_editor.h"
#include "ui/placement/placement_estimator.h"
#include "ui/placement/placement_model.h"
#include "ui/placement/placement_view.h"
#include "ui/placement/simulated_devices.h"

using namespace strata::ui;

namespace {

QJsonObject placement() {
  return QJsonDocument::fromJson(R"({"version":1,"n_ctx":64,"n_seq":1,"max_batch":256,"embedding":{"device":"gpu0"},"head":{"device":"gpu1"},
      "layers":[{"layers":"0-1","device":"gpu0"},{"layers":"2-4","device":"gpu1"}]})").object();
}

}  // namespace

class TestPlacementEditor : public QObject {
  Q_OBJECT
 private:
  RealEngine engine_;
  std::unique_ptr<EngineClient> client_;
  std::unique_ptr<PlacementEditor> editor_;
  PlacementEstimator* estimator_ = nullptr;

  bool waitCurrent() {
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < 30000 && (estimator_->busy() || !editor_->model()->estimateCurrent())) QTest::qWait(2);
    return editor_->model()->estimateCurrent() && !estimator_->busy();
  }

  // The engine's answer for the placement the editor shows (the preview while hovering).
  EngineEstimate engineEstimate() {
    QString error;
    const EngineEstimate e = engine_.estimate(editor_->model()->estimatedPlacement(), &error);
    if (!error.isEmpty()) qWarning("estimate: %s", qPrintable(error));
    return e;
  }

 private slots:
  void initTestCase() {
    // gpu0 holds the embedding and two blocks (about 1.3 MB with scratch), not the whole model (about
    // 2 MB): its capacity is the midpoint of the engine's totals for the two (the scratch follows this
    // CPU's kernel paths, RealEngine::capacityBetween).
    quint64 gpu0Capacity = 0;
    const QString failed = engine_.startWithCapacityBetween(
        QStringLiteral("cpu,sim:gpu0:64MiB,sim:gpu1:4MiB"), QStringLiteral("cpu,sim:gpu0:%1,sim:gpu1:4MiB"), 64, "gpu0",
        placement(), RealEngine::everythingOn(placement(), "gpu0", 5), &gpu0Capacity);
    if (!failed.isEmpty()) QFAIL(qPrintable(failed));
  }

  void init() {
    client_ = std::make_unique<EngineClient>();
    client_->setEndpoint(engine_.url(), engine_.apiKey());
    editor_ = std::make_unique<PlacementEditor>();
    estimator_ = new PlacementEstimator(client_.get(), editor_->model(), editor_.get());
    editor_->resize(900, 600);
    editor_->setDevices(engine_.devicesJson());
    editor_->setModelInfo(engine_.modelJson());
    editor_->resetPlacement(placement());
    editor_->show();
    QVERIFY(QTest::qWaitForWindowExposed(editor_.get()));
    QVERIFY(waitCurrent());
  }

  void cleanup() {
    editor_.reset();
    client_.reset();
  }

  void predictionIsTheEngines() {
    const EngineEstimate e = engineEstimate();
    QVERIFY(e.hasCost);
    auto* label = editor_->findChild<QLabel*>("prediction");
    QVERIFY(label);
    // gpu0 and gpu1 are simulated: the declared hardware's figures and this machine's, both labelled.
    QVERIFY(e.hasOnThisMachine);
    QVERIFY2(label->text().startsWith(QStringLiteral("Predicted, declared hardware: %1 tok/s decode (%2 ms/token), %3 tok/s prefill · this machine: %4 tok/s decode (%5 ms/token) · 1 boundary · %6 moved per token")
                                          .arg(e.cost.decodeTokensPerS, 0, 'f', 1)
                                          .arg(e.cost.decodeMsPerToken, 0, 'f', 2)
                                          .arg(e.cost.prefillTokensPerS, 0, 'f', 0)
                                          .arg(1000.0 / e.onThisMachine.decodeMsPerToken, 0, 'f', 1)
                                          .arg(e.onThisMachine.decodeMsPerToken, 0, 'f', 2)
                                          .arg(formatBytes(e.cost.transferBytesPerToken))),
             qPrintable(label->text()));
    QVERIFY(e.onThisMachine.decodeTokensPerS < e.cost.decodeTokensPerS);
    QCOMPARE(e.cost.transferBytesPerToken, 256ull);  // one boundary: 64 floats
    // The engine unreachable: the label says so instead of showing figures.
    client_->setEndpoint(QUrl(QStringLiteral("http://127.0.0.1:%1").arg(EngineProcess::freeLoopbackPort())), QString());
    QTRY_VERIFY_WITH_TIMEOUT(label->text().startsWith("No estimate: "), 30000);
    QVERIFY(!editor_->applyButton()->isEnabled());
  }

  // The draft model of speculative decoding (status "speculative"."draft") is named above the lanes
  // with its device and weight bytes; without one the line is hidden.
  void draftModelLine() {
    auto* line = editor_->findChild<QLabel*>(QStringLiteral("draftModel"));
    QVERIFY(line);
    QVERIFY(line->isHidden());
    editor_->setDraftModel(QJsonObject{{"id", "SmolLM2-135M-Instruct.Q4_1"}, {"device", "cpu"},
                                       {"weight_bytes", double(88 * 1024 * 1024)}, {"parameters", 134515008}});
    QVERIFY(line->isVisible());
    QCOMPARE(line->text(), QStringLiteral("Draft model SmolLM2-135M-Instruct.Q4_1 (%1 of weights) runs on cpu for "
                                          "speculative decoding, beside this placement: it guesses tokens that the "
                                          "model checks several at a time.")
                               .arg(formatBytes(88ull * 1024 * 1024)));
    editor_->setDraftModel(QJsonObject{});
    QVERIFY(line->isHidden());
  }

  void viewDrop_data() {
    QTest::addColumn<int>("firstTile");
    QTest::addColumn<int>("lastTile");
    QTest::addColumn<QString>("lane");
    QTest::addColumn<bool>("accepted");
    QTest::addColumn<bool>("overflows");  // Apply refused with the engine's reason
    QTest::newRow("blk 1 to cpu") << 2 << 2 << "cpu" << true << false;
    QTest::newRow("blk 2-4 and the head to gpu0 overflow") << 3 << 6 << "gpu0" << true << true;
    QTest::newRow("onto the model column") << 2 << 2 << "model" << false << false;
  }
  void viewDrop() {
    QFETCH(int, firstTile);
    QFETCH(int, lastTile);
    QFETCH(QString, lane);
    QFETCH(bool, accepted);
    QFETCH(bool, overflows);
    PlacementView* view = editor_->view();
    PlacementModel* model = editor_->model();
    const int column = lane == "model" ? 0 : model->laneOfDevice(lane);
    const QPoint pos(view->columnViewportPosition(column) + view->columnWidth(column) / 2, 5);
    std::unique_ptr<QMimeData> mime(PlacementModel::makeMime(firstTile, lastTile));

    // Qt routes DragMove and Drop to the widget that accepted DragEnter.
    QDragEnterEvent enter(pos, Qt::MoveAction | Qt::CopyAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(view->viewport(), &enter);
    QVERIFY(enter.isAccepted());
    QDragMoveEvent move(pos, Qt::MoveAction | Qt::CopyAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(view->viewport(), &move);
    QCOMPARE(move.isAccepted(), accepted);
    QCOMPARE(view->hoverColumn(), accepted ? column : -1);
    QCOMPARE(model->isPreviewing(), accepted);
    // The preview's figures, before the drop: the engine's for the previewed placement.
    QVERIFY(waitCurrent());
    EngineEstimate hovered = engineEstimate();
    QCOMPARE(model->memoryOf("gpu0").total, hovered.memory[1].total);
    QCOMPARE(model->memoryOf("gpu1").total, hovered.memory[2].total);
    QCOMPARE(model->fits(), !overflows);
    const quint64 gpu0Total = hovered.memory[1].total;

    QDropEvent drop(QPointF(pos), Qt::MoveAction | Qt::CopyAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(view->viewport(), &drop);
    QCOMPARE(drop.isAccepted(), accepted);
    QVERIFY(!model->isPreviewing());
    QVERIFY(waitCurrent());
    QCOMPARE(model->memoryOf("gpu0").total, gpu0Total);
    QCOMPARE(model->undoStack()->count(), accepted ? 1 : 0);
    const EngineEstimate dropped = engineEstimate();
    const QString applyReason = !accepted ? QStringLiteral("nothing moved") : overflows ? dropped.error : QString();
    if (overflows) QVERIFY2(applyReason.contains("device 'gpu0'") && applyReason.contains("short"), qPrintable(applyReason));
    QCOMPARE(editor_->applyBlockedReason(), applyReason);
    QCOMPARE(editor_->applyButton()->isEnabled(), applyReason.isEmpty());

    QSignalSpy apply(editor_.get(), &PlacementEditor::applyRequested);
    editor_->applyButton()->click();
    QCOMPARE(apply.count(), applyReason.isEmpty() ? 1 : 0);
    if (apply.count()) QCOMPARE(apply.first().first().toJsonObject(), model->placementJson());
  }

  // A part of some blocks dropped through the view, as a drag of part rows brings it: the exact
  // placement JSON, and the lanes' figures (weights by part too) the engine's for it.
  void viewPartDrop_data() {
    QTest::addColumn<int>("firstTile");
    QTest::addColumn<int>("lastTile");
    QTest::addColumn<QString>("part");
    QTest::addColumn<QString>("lane");
    QTest::addColumn<bool>("accepted");
    QTest::addColumn<QString>("layers");
    QTest::newRow("ffn of blk 2-3 to cpu")
        << 3 << 4 << "ffn" << "cpu" << true
        << R"([{"device":"gpu0","layers":"0-1"},{"device":"gpu1","ffn_device":"cpu","layers":"2-3"},{"device":"gpu1","layers":4}])";
    QTest::newRow("attention of blk 1 to gpu1")
        << 2 << 2 << "attention" << "gpu1" << true
        << R"([{"device":"gpu0","layers":0},{"device":"gpu1","ffn_device":"gpu0","layers":1},{"device":"gpu1","layers":"2-4"}])";
    QTest::newRow("ffn of blk 0 where it runs") << 1 << 1 << "ffn" << "gpu0" << false
                                                << R"([{"device":"gpu0","layers":"0-1"},{"device":"gpu1","layers":"2-4"}])";
    QTest::newRow("experts of a dense model") << 1 << 1 << "experts" << "cpu" << false
                                              << R"([{"device":"gpu0","layers":"0-1"},{"device":"gpu1","layers":"2-4"}])";
  }
  void viewPartDrop() {
    QFETCH(int, firstTile);
    QFETCH(int, lastTile);
    QFETCH(QString, part);
    QFETCH(QString, lane);
    QFETCH(bool, accepted);
    QFETCH(QString, layers);
    PlacementView* view = editor_->view();
    PlacementModel* model = editor_->model();
    const int column = model->laneOfDevice(lane);
    const QPoint pos(view->columnViewportPosition(column) + view->columnWidth(column) / 2, 5);
    std::unique_ptr<QMimeData> mime(PlacementModel::makeMime(firstTile, lastTile, partFromName(part), 0, 1));
    QDragEnterEvent enter(pos, Qt::MoveAction | Qt::CopyAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(view->viewport(), &enter);
    QDragMoveEvent move(pos, Qt::MoveAction | Qt::CopyAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(view->viewport(), &move);
    QCOMPARE(move.isAccepted(), accepted);
    QCOMPARE(model->isPreviewing(), accepted);
    QDropEvent drop(QPointF(pos), Qt::MoveAction | Qt::CopyAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(view->viewport(), &drop);
    QCOMPARE(drop.isAccepted(), accepted);
    QCOMPARE(QString::fromUtf8(QJsonDocument(model->placementJson().value("layers").toArray()).toJson(QJsonDocument::Compact)),
             layers);
    QVERIFY(waitCurrent());
    QCOMPARE(model->estimatedPlacement(), model->placementJson());
    const EngineEstimate e = engineEstimate();
    for (const DeviceMemoryEstimate& want : e.memory) {
      const int c = model->laneOfDevice(want.device);
      QCOMPARE(model->headerData(c, Qt::Horizontal, PlacementModel::LaneAttentionRole).toULongLong(), want.attention);
      QCOMPARE(model->headerData(c, Qt::Horizontal, PlacementModel::LaneFfnRole).toULongLong(), want.ffn);
      QCOMPARE(model->headerData(c, Qt::Horizontal, PlacementModel::LaneTotalRole).toULongLong(), want.total);
    }
    QCOMPARE(model->prediction().decodeTokensPerS, e.cost.decodeTokensPerS);
    if (accepted && part == "ffn") {
      // stories260K's FFN part: norm + 3 x 172 x 64 f32, per block; two blocks' of them on the CPU.
      QCOMPARE(model->memoryOf("cpu").ffn, 2ull * 4 * (64 + 3 * 172 * 64));
      QCOMPARE(model->memoryOf("cpu").attention, 0ull);
    }
  }

  void showPartsButton() {
    auto* button = editor_->findChild<QAbstractButton*>("showParts");
    QVERIFY(button);
    QCOMPARE(editor_->model()->rowCount(), 7);  // embedding, blk 0-4, head
    button->click();
    QCOMPARE(editor_->model()->rowCount(), 7 + 5 * 2);  // a dense model: attention and ffn rows
    QVERIFY(button->isChecked());
    QCOMPARE(editor_->model()->headerData(4, Qt::Vertical).toString(), QString("blk 1"));
    QCOMPARE(editor_->model()->headerData(5, Qt::Vertical).toString(), QString("blk 1 attention"));
    QCOMPARE(editor_->model()->headerData(6, Qt::Vertical).toString(), QString("blk 1 ffn"));
    // Hiding one block's parts: no longer every block's.
    editor_->model()->setExpanded(1, false);
    QVERIFY(!button->isChecked());
    button->click();
    QCOMPARE(editor_->model()->rowCount(), 7 + 5 * 2);
    button->click();
    QCOMPARE(editor_->model()->rowCount(), 7);
    QVERIFY(!button->isChecked());
  }

  void autoPlanAndResult() {
    QSignalSpy requested(editor_.get(), &PlacementEditor::requestAutoPlan);
    editor_->findChild<QPushButton*>("auto-balance")->click();
    editor_->findChild<QPushButton*>("auto-fewest-transfers")->click();
    QCOMPARE(requested.count(), 2);
    QCOMPARE(requested[0].first().toString(), QString("balance"));
    QCOMPARE(requested[1].first().toString(), QString("fewest-transfers"));
    // The /plan response: placement + explanation; undoable.
    QJsonObject planned = placement();
    planned["layers"] = QJsonArray{QJsonObject{{"layers", "0-4"}, {"device", "cpu"}}};
    planned["head"] = QJsonObject{{"device", "cpu"}};
    editor_->setPlacement(QJsonObject{{"placement", planned}, {"explanation", QJsonArray{"cpu: layers 0-4 + head"}}});
    QCOMPARE(editor_->model()->placementJson()["layers"], planned["layers"]);
    QCOMPARE(editor_->applyButton()->text(), QString("Apply: move 6 layer(s)"));
    editor_->model()->undoStack()->undo();
    QCOMPARE(editor_->model()->placementJson(), placement());
    QVERIFY(waitCurrent());
    editor_->applySucceeded();
    QCOMPARE(editor_->applyBlockedReason(), QString("nothing moved"));
  }

  void saveAndLoad() {
    QTemporaryDir dir;
    const QString path = dir.filePath("p.json");
    QJsonObject other = placement();
    other["layers"] = QJsonArray{QJsonObject{{"layers", "0-4"}, {"device", "gpu1"}}};
    QVERIFY(editor_->model()->setPlacement(other));
    QVERIFY(editor_->savePlacement(path));
    editor_->model()->undoStack()->undo();
    QString error;
    QVERIFY2(editor_->loadPlacement(path, &error), qPrintable(error));
    QCOMPARE(editor_->model()->placementJson(), other);
    QFile bad(dir.filePath("bad.json"));
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write("{\"version\": 1,");
    bad.close();
    QVERIFY(!editor_->loadPlacement(bad.fileName(), &error));
    QVERIFY2(error.contains("is not valid JSON"), qPrintable(error));
  }

  void planningMode() {
    QSignalSpy declared(editor_.get(), &PlacementEditor::devicesDeclared);
    editor_->setPlanningMode(true);  // starts with an RTX 4090 and an RTX 3060
    editor_->simulatedDevices()->declare();
    QCOMPARE(declared.count(), 1);
    QCOMPARE(declared.first().first().toString(),
             QString("cpu,sim:gpu0:24GiB:bw=1008GB/s:tflops=165,sim:gpu1:12GiB:bw=360GB/s:tflops=25"));
    // The editor plans with the declared devices at once.
    QCOMPARE(editor_->model()->memoryOf("gpu0").capacity, 24ull << 30);
    QCOMPARE(editor_->model()->headerData(editor_->model()->laneOfDevice("gpu1"), Qt::Horizontal,
                                          PlacementModel::LaneSimulatedRole).toBool(), true);
  }
};

QTEST_MAIN(TestPlacementEditor)
#include "test_placement_editor.moc"
