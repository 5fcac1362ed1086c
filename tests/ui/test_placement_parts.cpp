// tests/ui/test_placement_parts.cpp — placement below the block in the editor, against the real engine
// serving a random-weight qwen3moe model (4 blocks, 8 experts, top-2; made with `strata-engine
// make-model`) on a CPU and two simulated GPUs: a block's parts shown as rows (attention, FFN part,
// expert ranges; split and joined), each part dragged on its own through the model's own
// mimeData/dropMimeData giving the exact placement JSON, dropping a part where it runs anyway
// clearing its override, refused part drops, and after each drop the per-device figures (weights by
// part included) and the predicted speed being the engine's answer for the per-part placement. The
// view's part menu and double-click. Every model change runs under QAbstractItemModelTester.
#include <QAbstractItemModelTester>
#include <QAction>
#include <QApplication>
#include <QInputDialog>
#include <QJsonArray>
#include <QJsonDocument>
#include <QMenu>
#include <QMimeData>
#include <QProcess>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTimer>
#include <QToolTip>
#include <QVBoxLayout>
#include <QtTest>

#include "real_engine.h"
#include "ui/placement/placement_estimator.h"
#include "ui/placement/placement_model.h"
#include "ui/placement/placement_view.h"

using namespace strata::ui;

namespace {

constexpr int kCtx = 64;
constexpr int kExperts = 8;
// One block's routed experts: 8 x (gate, up: 32 x 64; down: 64 x 32) f32 = 196,608 bytes.
constexpr quint64 kExpertsBytes = 8ull * 3 * 32 * 64 * 4;

// embedding + blk 0-1 on gpu0, blk 2-3 + head on gpu1.
QJsonObject initialPlacement() {
  return QJsonDocument::fromJson(R"({"version":1,"n_ctx":64,"n_seq":1,"max_batch":256,
      "embedding":{"device":"gpu0"},"head":{"device":"gpu1"},
      "layers":[{"layers":"0-1","device":"gpu0"},{"layers":"2-3","device":"gpu1"}]})")
      .object();
}
const QString kInitialLayers = R"([{"device":"gpu0","layers":"0-1"},{"device":"gpu1","layers":"2-3"}])";

QString layersJson(const QJsonObject& placement) {
  return QString::fromUtf8(QJsonDocument(placement.value("layers").toArray()).toJson(QJsonDocument::Compact));
}

}  // namespace

class TestPlacementParts : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir dir_;
  RealEngine engine_;
  std::unique_ptr<EngineClient> client_;
  std::unique_ptr<PlacementModel> model_;
  std::unique_ptr<QAbstractItemModelTester> tester_;
  std::unique_ptr<PlacementEstimator> estimator_;

  bool waitCurrent() {
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < 30000 && (estimator_->busy() || !model_->estimateCurrent())) QTest::qWait(2);
    return model_->estimateCurrent() && !estimator_->busy();
  }

  // The figures shown, weights by part included, are the engine's answer for the placement shown.
  void compareWithEngine() {
    QString error;
    const EngineEstimate e = engine_.estimate(model_->estimatedPlacement(), &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QVERIFY(e.hasCost);
    for (const DeviceMemoryEstimate& want : e.memory) {
      const int lane = model_->laneOfDevice(want.device);
      const auto header = [&](int role) { return model_->headerData(lane, Qt::Horizontal, role).toULongLong(); };
      QCOMPARE(header(PlacementModel::LaneWeightsRole), want.weights);
      QCOMPARE(header(PlacementModel::LaneAttentionRole), want.attention);
      QCOMPARE(header(PlacementModel::LaneFfnRole), want.ffn);
      QCOMPARE(header(PlacementModel::LaneExpertsRole), want.experts);
      QCOMPARE(header(PlacementModel::LaneKvRole), want.kv);
      QCOMPARE(header(PlacementModel::LaneTotalRole), want.total);
      QCOMPARE(model_->headerData(lane, Qt::Horizontal, PlacementModel::LaneFitsRole).toBool(), want.fits);
    }
    QCOMPARE(model_->fits(), e.fits);
    QCOMPARE(model_->prediction().decodeTokensPerS, e.cost.decodeTokensPerS);
    QCOMPARE(model_->prediction().prefillTokensPerS, e.cost.prefillTokensPerS);
    QCOMPARE(model_->prediction().boundaries, e.cost.boundaries);
    QCOMPARE(model_->prediction().transferBytesPerToken, e.cost.transferBytesPerToken);
  }

  // One step of a row: "split L C" cuts block L's experts at C; "drag PART A-B[:E-F] LANE" drags
  // PART ("whole", "attention", "ffn", "experts"; experts E..F inclusive, default all) of blocks A..B, taken
  // from their part rows with the model's own mimeData, onto LANE (a device, or "group:a,b").
  // Returns whether the drop was taken.
  bool step(const QString& text) {
    const QStringList w = text.split(' ', Qt::SkipEmptyParts);
    if (w[0] == "split") return model_->splitExperts(w[1].toInt(), w[2].toInt());
    const BlockPart part = partFromName(w[1]);
    const QStringList blocks = w[2].section(':', 0, 0).split('-');
    const QStringList experts = w[2].section(':', 1, 1).split('-', Qt::SkipEmptyParts);
    const int begin = experts.isEmpty() ? 0 : experts[0].toInt();
    const int end = experts.isEmpty() ? kExperts : experts.value(1, experts[0]).toInt() + 1;
    QModelIndexList rows;
    for (int b = blocks[0].toInt(); b <= blocks.value(1, blocks[0]).toInt(); ++b) {
      if (part != BlockPart::Whole) model_->setExpanded(b, true);
      const int row = model_->rowOf(TileRow{b + 1, part, part == BlockPart::Experts ? begin : 0,
                                            part == BlockPart::Experts ? end : 0});
      if (row < 0) qWarning("no row for %s of blk %d", qPrintable(w[1]), b);
      rows << model_->index(row, 0);
    }
    int column = model_->laneOfDevice(w[3]);
    if (w[3].startsWith("group:")) column = model_->addGroupLane(w[3].mid(6).split(','), {1, 1});
    std::unique_ptr<QMimeData> mime(model_->mimeData(rows));
    const bool can = model_->canDropMimeData(mime.get(), Qt::MoveAction, -1, column, {});
    const bool dropped = model_->dropMimeData(mime.get(), Qt::MoveAction, -1, column, {});
    if (can != dropped) qWarning("canDropMimeData %d, dropMimeData %d", can, dropped);
    return dropped;
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    const QString path = dir_.filePath("moe.gguf");
    QProcess make;
    make.start(RealEngine::binary(),
               {"make-model", "--arch", "qwen3moe", "--vocab-from", RealEngine::modelPath(), "--dim", "64", "--layers", "4",
                "--heads", "4", "--kv-heads", "2", "--ffn", "128", "--experts", QString::number(kExperts), "--experts-used",
                "2", "--expert-ff", "32", "--ctx", "256", "--type", "f32", "--seed", "3", "-o", path});
    QVERIFY(make.waitForFinished(60000));
    QVERIFY2(make.exitCode() == 0, make.readAllStandardError().constData());
    const QString failed = engine_.start(QStringLiteral("cpu,sim:gpu0:8MiB,sim:gpu1:8MiB"), kCtx, path);
    if (!failed.isEmpty()) QFAIL(qPrintable(failed));
    QCOMPARE(engine_.modelJson().value("n_expert").toInt(), kExperts);
    QCOMPARE(engine_.modelJson().value("n_expert_used").toInt(), 2);
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

  void partRows() {
    QCOMPARE(model_->rowCount(), 6);  // embedding, blk 0-3, head
    QVERIFY(model_->setExpanded(1, true));
    QStringList labels;
    for (int r = 0; r < model_->rowCount(); ++r) labels << model_->headerData(r, Qt::Vertical).toString();
    QCOMPARE(labels, (QStringList{"embedding", "blk 0", "blk 1", "blk 1 attention", "blk 1 ffn", "blk 1 experts 0-7",
                                  "blk 2", "blk 3", "head"}));
    QCOMPARE(model_->data(model_->index(2, 0)).toString(), QString("▾ blk 1"));
    QVERIFY(model_->data(model_->index(2, 0), PlacementModel::ExpandedRole).toBool());
    // The parts' sizes are the engine's, and add up to the block's.
    const QJsonObject parts = engine_.modelJson().value("layer_parts").toArray().at(1).toObject();
    const auto bytes = [&](int row) { return model_->data(model_->index(row, 0), PlacementModel::TileBytesRole).toULongLong(); };
    QCOMPARE(bytes(3), quint64(parts.value("attention_bytes").toDouble()));
    QCOMPARE(bytes(4), quint64(parts.value("ffn_bytes").toDouble()));
    QCOMPARE(bytes(5), kExpertsBytes);
    QCOMPARE(bytes(3) + bytes(4) + bytes(5), bytes(2));
    // Each part row is placed on gpu0 (column 2), where blk 1 runs.
    for (int row = 3; row <= 5; ++row) {
      QVERIFY(model_->data(model_->index(row, 2), PlacementModel::PlacedRole).toBool());
      QVERIFY(model_->flags(model_->index(row, 2)) & Qt::ItemIsDragEnabled);
      QVERIFY(!model_->data(model_->index(row, 3), PlacementModel::PlacedRole).toBool());
    }
    // Split: two expert rows, each half the bytes; joined again: one.
    QVERIFY(model_->splitExperts(1, 4));
    QCOMPARE(model_->rowCount(), 10);
    QCOMPARE(model_->headerData(5, Qt::Vertical).toString(), QString("blk 1 experts 0-3"));
    QCOMPARE(model_->headerData(6, Qt::Vertical).toString(), QString("blk 1 experts 4-7"));
    QCOMPARE(bytes(6), kExpertsBytes / 2);
    QVERIFY(!model_->splitExperts(1, 8));  // not inside 1..7
    QVERIFY(!model_->splitExperts(1, 0));
    // A selection of one part drags that part; mixed rows drag the tiles they span, whole.
    const auto payload = [&](const QModelIndexList& rows) {
      std::unique_ptr<QMimeData> mime(model_->mimeData(rows));
      return QString::fromUtf8(mime->data("application/x-strata-layers"));
    };
    QCOMPARE(payload({model_->index(6, 0)}), QString(R"({"experts":[4,8],"first_tile":2,"last_tile":2,"part":"experts"})"));
    QCOMPARE(payload({model_->index(4, 0)}), QString(R"({"first_tile":2,"last_tile":2,"part":"ffn"})"));
    QCOMPARE(payload({model_->index(3, 0), model_->index(7, 0)}), QString(R"({"first_tile":2,"last_tile":3})"));
    QCOMPARE(payload({model_->index(5, 0), model_->index(6, 0)}), QString(R"({"first_tile":2,"last_tile":2})"));
    QVERIFY(model_->joinExperts(1));
    QCOMPARE(model_->rowCount(), 9);
    QVERIFY(model_->setExpanded(1, false));
    QCOMPARE(model_->rowCount(), 6);
    model_->setAllExpanded(true);
    QCOMPARE(model_->rowCount(), 6 + 4 * 3);
    QCOMPARE(model_->undoStack()->count(), 0);  // showing parts edits nothing
  }

  void dragPart_data() {
    QTest::addColumn<QString>("steps");    // see step()
    QTest::addColumn<bool>("accepted");    // the last step's drop
    QTest::addColumn<QString>("layers");   // the placement's "layers" after the steps, exactly
    QTest::addColumn<QString>("error");    // the refusal (last step), else empty

    QTest::newRow("ffn of blocks 2-3 to cpu")
        << "drag ffn 2-3 cpu" << true
        << R"([{"device":"gpu0","layers":"0-1"},{"device":"gpu1","experts":"gpu1","ffn_device":"cpu","layers":"2-3"}])" << "";
    QTest::newRow("experts of blk 1 to cpu")
        << "drag experts 1 cpu" << true
        << R"([{"device":"gpu0","layers":0},{"device":"gpu0","experts":"cpu","layers":1},{"device":"gpu1","layers":"2-3"}])" << "";
    QTest::newRow("experts of blocks 0-3 to cpu")
        << "drag experts 0-3 cpu" << true
        << R"([{"device":"gpu0","experts":"cpu","layers":"0-1"},{"device":"gpu1","experts":"cpu","layers":"2-3"}])" << "";
    QTest::newRow("split experts range dragged")
        << "split 1 4; drag experts 1:4-7 cpu" << true
        << R"([{"device":"gpu0","layers":0},{"device":"gpu0","experts":[{"device":"gpu0","experts":"0-3"},{"device":"cpu","experts":"4-"}],"layers":1},{"device":"gpu1","layers":"2-3"}])"
        << "";
    QTest::newRow("both split ranges dragged apart")
        << "split 2 4; drag experts 2:0-3 cpu; drag experts 2:4-7 gpu0" << true
        << R"([{"device":"gpu0","layers":"0-1"},{"device":"gpu1","experts":[{"device":"cpu","experts":"0-3"},{"device":"gpu0","experts":"4-"}],"layers":2},{"device":"gpu1","layers":3}])"
        << "";
    QTest::newRow("attention moves the target, ffn stays")
        << "drag attention 0 gpu1" << true
        << R"([{"device":"gpu1","ffn_device":"gpu0","layers":0},{"device":"gpu0","layers":1},{"device":"gpu1","layers":"2-3"}])" << "";
    QTest::newRow("ffn back to its block's device clears it")
        << "drag ffn 2-3 cpu; drag ffn 2-3 gpu1" << true << kInitialLayers << "";
    QTest::newRow("experts back to the ffn's device clear them")
        << "drag experts 1 cpu; drag experts 1 gpu0" << true << kInitialLayers << "";
    QTest::newRow("split range back merges and clears")
        << "split 1 4; drag experts 1:4-7 cpu; drag experts 1:4-7 gpu0" << true << kInitialLayers << "";
    QTest::newRow("attention back clears the ffn override")
        << "drag attention 0 gpu1; drag attention 0 gpu0" << true << kInitialLayers << "";
    QTest::newRow("whole block moves all its parts")
        << "drag experts 1 cpu; drag ffn 1 gpu1; drag whole 1 gpu1" << true
        << R"([{"device":"gpu0","layers":0},{"device":"gpu1","layers":"1-3"}])" << "";
    QTest::newRow("experts onto a group refused")
        << "drag experts 1 group:gpu0,gpu1" << false << kInitialLayers
        << "blk 1: the experts run on one device, not a tensor group";
    QTest::newRow("ffn onto a group refused")
        << "drag ffn 1 group:gpu0,gpu1" << false << kInitialLayers
        << "blk 1: the FFN part runs on one device, not a tensor group (move the attention or the whole block there)";
    QTest::newRow("part where it runs: nothing moves")
        << "drag ffn 0-1 gpu0" << false << kInitialLayers << "nothing moves: blk 0 … blk 1 ffn → gpu0 is already there";
  }

  void dragPart() {
    QFETCH(QString, steps);
    QFETCH(bool, accepted);
    QFETCH(QString, layers);
    QFETCH(QString, error);
    const QStringList list = steps.split("; ");
    for (int i = 0; i + 1 < list.size(); ++i) QVERIFY2(step(list[i]), qPrintable(list[i] + ": " + model_->lastError()));
    QSignalSpy rejected(model_.get(), &PlacementModel::editRejected);
    QCOMPARE(step(list.last()), accepted);
    QCOMPARE(layersJson(model_->placementJson()), layers);
    if (!accepted) {
      QCOMPARE(rejected.count(), 1);
      QCOMPARE(model_->lastError(), error);
      return;
    }
    // The per-part placement is what the engine was asked about, and what the editor shows.
    QVERIFY(waitCurrent());
    QCOMPARE(model_->estimatedPlacement(), model_->placementJson());
    compareWithEngine();
    // Undo goes back step by step to the engine's placement.
    while (model_->undoStack()->canUndo()) model_->undoStack()->undo();
    QCOMPARE(model_->placementJson(), initialPlacement());
  }

  void expertsOnCpuFollowTheDrag() {
    // The experts of blk 1 on the CPU: the CPU holds exactly them and nothing else, and the
    // predicted speed is the engine's for the new placement (the hidden state crosses to the CPU
    // and back: more bytes per token, fewer tokens/s).
    const quint64 transferBytes = model_->prediction().transferBytesPerToken;
    const double tokensPerS = model_->prediction().decodeTokensPerS;
    QVERIFY(step("drag experts 1 cpu"));
    QVERIFY(waitCurrent());
    compareWithEngine();
    QCOMPARE(model_->memoryOf("cpu").experts, kExpertsBytes);
    QCOMPARE(model_->memoryOf("cpu").attention, 0ull);
    QCOMPARE(model_->memoryOf("cpu").kv, 0ull);
    QCOMPARE(model_->memoryOf("cpu").weights, kExpertsBytes);
    QVERIFY(model_->prediction().transferBytesPerToken > transferBytes);  // the crossings to the CPU and back
    QVERIFY(model_->prediction().decodeTokensPerS < tokensPerS);
    QVERIFY2(model_->headerData(model_->laneOfDevice("cpu"), Qt::Horizontal, Qt::ToolTipRole).toString().contains("experts 192.0 KiB"),
             qPrintable(model_->headerData(model_->laneOfDevice("cpu"), Qt::Horizontal, Qt::ToolTipRole).toString()));
    // The collapsed block's row says which parts sit on the CPU lane.
    model_->setExpanded(1, false);
    const int row = model_->rowOf(TileRow{2});
    QCOMPARE(model_->data(model_->index(row, model_->laneOfDevice("cpu")), PlacementModel::PartsHereRole).toStringList(),
             QStringList{"experts"});
    QCOMPARE(model_->data(model_->index(row, model_->laneOfDevice("cpu"))).toString(), QString("blk 1  experts"));
    QVERIFY(model_->data(model_->index(row, model_->laneOfDevice("gpu0")), PlacementModel::PlacedRole).toBool());
  }

  void attentionTakesTheKv() {
    const quint64 gpu1Kv = model_->memoryOf("gpu1").kv;
    QVERIFY(step("drag attention 0 gpu1"));
    QVERIFY(waitCurrent());
    compareWithEngine();
    QVERIFY(model_->memoryOf("gpu1").kv > gpu1Kv);  // blk 0's KV went with its attention
    QCOMPARE(model_->memoryOf("gpu1").kv, gpu1Kv * 3 / 2);
  }

  void hoverPreviewOfAPart() {
    model_->setExpanded(3, true);
    std::unique_ptr<QMimeData> mime(model_->mimeData({model_->index(model_->rowOf(TileRow{4, BlockPart::Experts, 0, kExperts}), 0)}));
    QString error;
    const PlacementEdit e = model_->editFromMime(mime.get(), model_->laneOfDevice("cpu"), &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QCOMPARE(e.part, BlockPart::Experts);
    QCOMPARE(e.description(4), QString("blk 3 experts → cpu"));
    const int rows = model_->rowCount();
    model_->previewEdit(e);
    QVERIFY(waitCurrent());
    compareWithEngine();
    QCOMPARE(model_->memoryOf("cpu").experts, kExpertsBytes);
    QCOMPARE(model_->rowCount(), rows);  // the rows stay while hovering
    QCOMPARE(model_->undoStack()->count(), 0);
    model_->clearPreview();
    QVERIFY(waitCurrent());
    QCOMPARE(model_->memoryOf("cpu").total, 0ull);
  }

  void placedRangesStayRows() {
    // A placement with expert ranges (an auto plan, a file) shows them as rows, and its blocks' parts
    // drag from there.
    QJsonObject p = initialPlacement();
    p["layers"] = QJsonDocument::fromJson(R"([{"layers":"0-1","device":"gpu0","experts":[{"experts":"0-5","device":"gpu0"},{"experts":"6-","device":"cpu"}]},
                                              {"layers":"2-3","device":"gpu1"}])").array();
    QVERIFY(model_->setPlacement(p));
    model_->setExpanded(0, true);
    QCOMPARE(model_->headerData(model_->rowOf(TileRow{1, BlockPart::Experts, 6, 8}), Qt::Vertical).toString(),
             QString("blk 0 experts 6-7"));
    QVERIFY(model_->data(model_->index(model_->rowOf(TileRow{1, BlockPart::Experts, 6, 8}), model_->laneOfDevice("cpu")),
                         PlacementModel::PlacedRole).toBool());
    QVERIFY(step("drag experts 0:0-5 cpu"));
    QCOMPARE(layersJson(model_->placementJson()),
             QString(R"([{"device":"gpu0","experts":"cpu","layers":0},{"device":"gpu0","experts":[{"device":"gpu0","experts":"0-5"},{"device":"cpu","experts":"6-"}],"layers":1},{"device":"gpu1","layers":"2-3"}])"));
    QCOMPARE(model_->rowOf(TileRow{1, BlockPart::Experts, 6, 8}), -1);  // blk 0's experts are one range again
    QVERIFY(model_->rowOf(TileRow{1, BlockPart::Experts, 0, 8}) > 0);
    QVERIFY(waitCurrent());
    compareWithEngine();
  }

  void footerTooltipHasTheParts() {
    // The memory bar under a lane shows the lane's figures, weights by part included.
    QVERIFY(step("drag experts 1 cpu"));
    QVERIFY(waitCurrent());
    QWidget window;
    auto* layout = new QVBoxLayout(&window);
    auto* view = new PlacementView(&window);
    view->setPlacementModel(model_.get());
    auto* footer = new LaneFooter(view, &window);
    layout->addWidget(view);
    layout->addWidget(footer);
    window.resize(800, 400);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    const int cpu = model_->laneOfDevice("cpu");
    const QPoint at(view->viewport()->mapTo(&window, QPoint(view->columnViewportPosition(cpu) + 10, 0)).x() -
                        footer->mapTo(&window, QPoint(0, 0)).x(),
                    5);
    QHelpEvent help(QEvent::ToolTip, at, footer->mapToGlobal(at));
    QCoreApplication::sendEvent(footer, &help);
    const QString tip = model_->headerData(cpu, Qt::Horizontal, Qt::ToolTipRole).toString();
    QCOMPARE(QToolTip::text(), tip);
    QVERIFY2(tip.startsWith("cpu (") && tip.contains("(attention 0 B, ffn 0 B, experts 192.0 KiB)"), qPrintable(tip));
    QToolTip::hideText();
  }

  void viewMenuAndDoubleClick() {
    PlacementView view;
    view.setPlacementModel(model_.get());
    view.resize(800, 400);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    // Double-click on blk 2 shows its parts; again hides them.
    const QModelIndex blk2 = model_->index(model_->rowOf(TileRow{3}), 0);
    QTest::mouseDClick(view.viewport(), Qt::LeftButton, {}, view.visualRect(blk2).center());
    QVERIFY(model_->isExpanded(2));
    QCOMPARE(model_->rowCount(), 6 + 3);
    QTest::mouseDClick(view.viewport(), Qt::LeftButton, {}, view.visualRect(model_->index(model_->rowOf(TileRow{3}), 0)).center());
    QVERIFY(!model_->isExpanded(2));
    // The menu of a block, then of its experts row.
    std::unique_ptr<QMenu> menu(view.rowMenu(blk2, nullptr));
    QAction* show = menu->findChild<QAction*>("showParts");
    QVERIFY(show);
    QCOMPARE(show->text(), QString("Show parts of blk 2"));
    show->trigger();
    QVERIFY(model_->isExpanded(2));
    const QModelIndex experts = model_->index(model_->rowOf(TileRow{3, BlockPart::Experts, 0, kExperts}), 0);
    std::unique_ptr<QMenu> partsMenu(view.rowMenu(experts, nullptr));
    QVERIFY(partsMenu->findChild<QAction*>("splitExperts"));
    QVERIFY(partsMenu->findChild<QAction*>("splitExperts")->isEnabled());
    QVERIFY(partsMenu->findChild<QAction*>("hideParts"));
    // "Split experts…" asks for the cut in a spin box (6 here): two rows, 0-5 and 6-7.
    QTimer answer;
    answer.setInterval(10);
    connect(&answer, &QTimer::timeout, this, [&answer] {
      auto* dialog = qobject_cast<QInputDialog*>(QApplication::activeModalWidget());
      if (!dialog) return;
      answer.stop();
      QCOMPARE(dialog->intMinimum(), 1);
      QCOMPARE(dialog->intMaximum(), 7);
      QVERIFY(dialog->findChild<QSpinBox*>());
      dialog->setIntValue(6);
      dialog->accept();
    });
    answer.start();
    partsMenu->findChild<QAction*>("splitExperts")->trigger();
    QVERIFY(model_->rowOf(TileRow{3, BlockPart::Experts, 0, 6}) > 0);
    QVERIFY(model_->rowOf(TileRow{3, BlockPart::Experts, 6, kExperts}) > 0);
    partsMenu->findChild<QAction*>("joinExperts")->trigger();
    QCOMPARE(model_->rowOf(TileRow{3, BlockPart::Experts, 0, 6}), -1);
    menu.reset(view.rowMenu(blk2, nullptr));
    menu->findChild<QAction*>("showAllParts")->trigger();
    QCOMPARE(model_->rowCount(), 6 + 4 * 3);
    menu->findChild<QAction*>("hideAllParts")->trigger();
    QCOMPARE(model_->rowCount(), 6);
  }
};

QTEST_MAIN(TestPlacementParts)
#include "test_placement_parts.moc"
