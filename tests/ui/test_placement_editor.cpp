// tests/ui/test_placement_editor.cpp — the editor panel: drops through the view (synthesized
// QDragMoveEvent/QDropEvent), hover preview, Apply refused with the reason on overflow, auto-plan
// signals and plan results, save/load, planning mode with declared devices.
#include <QDragMoveEvent>
#include <QDropEvent>
#include <QJsonArray>
#include <QJsonDocument>
#include <QMimeData>
#include <QPushButton>
#include <QTemporaryDir>
#include <QtTest>

#include "ui/placement/placement_editor.h"
#include "ui/placement/placement_model.h"
#include "ui/placement/placement_view.h"
#include "ui/placement/simulated_devices.h"

using namespace strata::ui;

namespace {

QJsonObject modelInfo() {
  return QJsonObject{{"name", "toy"}, {"n_layers", 4}, {"layer_bytes", 1000}, {"embedding_bytes", 500},
                     {"head_bytes", 600}, {"kv_bytes_per_token", 2}, {"n_embd", 8}, {"scratch_bytes", 50}};
}

QJsonArray devices() {
  return QJsonArray{QJsonObject{{"id", "cpu"}, {"kind", "cpu"}, {"bytes_total", 100000}, {"bandwidth_gbps", 50}},
                    QJsonObject{{"id", "gpu0"}, {"kind", "sim"}, {"simulated", true}, {"bytes_total", 3000}, {"bandwidth_gbps", 1000}},
                    QJsonObject{{"id", "gpu1"}, {"kind", "sim"}, {"simulated", true}, {"bytes_total", 4000}, {"bandwidth_gbps", 500}}};
}

QJsonObject placement() {
  return QJsonDocument::fromJson(R"({"version":1,"n_ctx":100,"n_seq":1,"max_batch":256,"embedding":{"device":"gpu0"},"head":{"device":"gpu1"},
      "layers":[{"layers":"0-1","device":"gpu0"},{"layers":"2-3","device":"gpu1"}]})").object();
}

}  // namespace

class TestPlacementEditor : public QObject {
  Q_OBJECT
 private:
  std::unique_ptr<PlacementEditor> editor_;

 private slots:
  void init() {
    editor_ = std::make_unique<PlacementEditor>();
    editor_->resize(900, 600);
    editor_->setDevices(devices());
    editor_->setModelInfo(modelInfo());
    editor_->resetPlacement(placement());
    editor_->show();
    QVERIFY(QTest::qWaitForWindowExposed(editor_.get()));
  }

  void viewDrop_data() {
    QTest::addColumn<int>("firstTile");
    QTest::addColumn<int>("lastTile");
    QTest::addColumn<QString>("lane");
    QTest::addColumn<bool>("accepted");
    QTest::addColumn<quint64>("gpu1Total");
    QTest::addColumn<QString>("applyReason");
    QTest::newRow("blk 1 to cpu") << 2 << 2 << "cpu" << true << quint64(3050) << "";
    QTest::newRow("blk 0-1 to gpu1 overflows") << 1 << 2 << "gpu1" << true << quint64(5450)
                                               << "gpu1: needs 5.3 KiB, has 3.9 KiB: short 1.4 KiB";
    QTest::newRow("onto the model column") << 2 << 2 << "model" << false << quint64(3050) << "nothing moved";
  }
  void viewDrop() {
    QFETCH(int, firstTile);
    QFETCH(int, lastTile);
    QFETCH(QString, lane);
    QFETCH(bool, accepted);
    QFETCH(quint64, gpu1Total);
    QFETCH(QString, applyReason);
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
    QCOMPARE(model->memoryOf("gpu1").total, gpu1Total);  // the preview, before the drop

    QDropEvent drop(QPointF(pos), Qt::MoveAction | Qt::CopyAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(view->viewport(), &drop);
    QCOMPARE(drop.isAccepted(), accepted);
    QVERIFY(!model->isPreviewing());
    QCOMPARE(model->memoryOf("gpu1").total, gpu1Total);
    QCOMPARE(model->undoStack()->count(), accepted ? 1 : 0);
    QCOMPARE(editor_->applyBlockedReason(), applyReason);
    QCOMPARE(editor_->applyButton()->isEnabled(), applyReason.isEmpty());

    QSignalSpy apply(editor_.get(), &PlacementEditor::applyRequested);
    editor_->applyButton()->click();
    QCOMPARE(apply.count(), applyReason.isEmpty() ? 1 : 0);
    if (apply.count()) QCOMPARE(apply.first().first().toJsonObject(), model->placementJson());
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
    planned["layers"] = QJsonArray{QJsonObject{{"layers", "0-3"}, {"device", "cpu"}}};
    planned["head"] = QJsonObject{{"device", "cpu"}};
    editor_->setPlacement(QJsonObject{{"placement", planned}, {"explanation", QJsonArray{"cpu: layers 0-3 + head"}}});
    QCOMPARE(editor_->model()->placementJson()["layers"], planned["layers"]);
    QCOMPARE(editor_->applyButton()->text(), QString("Apply: move 5 layer(s)"));
    editor_->model()->undoStack()->undo();
    QCOMPARE(editor_->model()->placementJson(), placement());
    editor_->applySucceeded();
    QCOMPARE(editor_->applyBlockedReason(), QString("nothing moved"));
  }

  void saveAndLoad() {
    QTemporaryDir dir;
    const QString path = dir.filePath("p.json");
    QJsonObject other = placement();
    other["layers"] = QJsonArray{QJsonObject{{"layers", "0-3"}, {"device", "gpu1"}}};
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
