// tests/ui/test_devices_model.cpp — DeviceModel from devices/status/trace JSON (exact bytes), real
// GPUs' compute capability, peer access and failure (roles, label, tooltip), the memory bar's segment
// colours and the simulated hatch (pixels), model tester.
#include <QAbstractItemModelTester>
#include <QImage>
#include <QJsonArray>
#include <QListView>
#include <QPainter>
#include <QSignalSpy>
#include <QtTest>

#include "ui/devices/device_delegate.h"
#include "ui/devices/device_model.h"
#include "ui/devices/devices_panel.h"
#include "ui/devices/memory_bar.h"

using namespace strata::ui;

namespace {

constexpr quint64 GiB = 1ull << 30;

QJsonArray devices() {
  return QJsonArray{QJsonObject{{"id", "cpu"}, {"kind", "cpu"}, {"name", "CPU"}, {"simulated", false},
                                {"bytes_total", double(64 * GiB)}, {"bytes_free", double(60 * GiB)}, {"bandwidth_gbps", 50}},
                    QJsonObject{{"id", "gpu0"}, {"kind", "sim"}, {"name", "sim-gpu0 24 GiB (simulated)"}, {"simulated", true},
                                {"bytes_total", double(24 * GiB)}, {"bytes_free", double(24 * GiB)}, {"bandwidth_gbps", 1008}}};
}

// Two CUDA devices that reach each other directly, a third that met a sticky error, a simulated
// device and the CPU: what /strata/v1/devices says on a machine with GPUs.
QJsonArray cudaDevices() {
  auto cuda = [](int ordinal, const QJsonArray& peers, bool failed, const QString& failure) {
    return QJsonObject{{"id", QStringLiteral("cuda%1").arg(ordinal)}, {"kind", "cuda"}, {"name", "NVIDIA H200"},
                       {"simulated", false}, {"bytes_total", double(140 * GiB)}, {"bytes_free", double(139 * GiB)},
                       {"bandwidth_gbps", 4800}, {"compute_capability", "9.0"}, {"ordinal", ordinal},
                       {"peers", peers}, {"failed", failed}, {"failure", failure},
                       {"caps", QJsonObject{{"host_memory", false}, {"peer_access", true}, {"collective", "nccl"}}}};
  };
  const QString sticky = "cudaStreamSynchronize failed: an illegal memory access was encountered";
  return QJsonArray{cuda(0, QJsonArray{"cuda1"}, false, ""), cuda(1, QJsonArray{"cuda0"}, false, ""),
                    cuda(2, QJsonArray{}, true, sticky),
                    QJsonObject{{"id", "gpu0"}, {"kind", "sim"}, {"name", "sim-gpu0 24 GiB (simulated)"},
                                {"simulated", true}, {"bytes_total", double(24 * GiB)}, {"bytes_free", double(24 * GiB)},
                                {"compute_capability", ""}, {"ordinal", -1}, {"peers", QJsonArray{}},
                                {"failed", false}, {"failure", ""}},
                    devices()[0]};  // the CPU as an older engine sends it: no GPU fields at all
}

QJsonObject lanesBatch(const QJsonArray& memory) {
  return QJsonObject{{"lanes", QJsonArray{QJsonObject{{"id", 0}, {"name", "gpu0"}, {"simulated", true}},
                                          QJsonObject{{"id", 1}, {"name", "cpu"}, {"simulated", false}}}},
                     {"events", QJsonArray{}},
                     {"memory", memory}};
}

}  // namespace

class TestDevicesModel : public QObject {
  Q_OBJECT
 private slots:
  void fromJson_data() {
    QTest::addColumn<QString>("source");  // which JSON is applied after setDevices
    QTest::addColumn<QString>("device");
    QTest::addColumn<QList<quint64>>("expected");  // capacity, weights, kvUsed, kvReserved, scratch, other, free
    QTest::newRow("devices only") << "none" << "cpu" << QList<quint64>{64 * GiB, 0, 0, 0, 0, 4 * GiB, 60 * GiB};
    QTest::newRow("status") << "status" << "gpu0"
                            << QList<quint64>{24 * GiB, 10 * GiB, 0, 2 * GiB, GiB / 2, GiB / 4, 24 * GiB - 10 * GiB - 2 * GiB - GiB / 2 - GiB / 4};
    QTest::newRow("trace snapshot") << "trace" << "gpu0" << QList<quint64>{24 * GiB, 10 * GiB, GiB, 2 * GiB, GiB, 0, 11 * GiB};
    QTest::newRow("older snapshot ignored") << "trace+old" << "gpu0" << QList<quint64>{24 * GiB, 10 * GiB, GiB, 2 * GiB, GiB, 0, 11 * GiB};
    QTest::newRow("status keeps KV used") << "trace+status" << "gpu0"
                                          << QList<quint64>{24 * GiB, 10 * GiB, GiB, 2 * GiB, GiB / 2, GiB / 4, 24 * GiB - 10 * GiB - 2 * GiB - GiB / 2 - GiB / 4};
  }
  void fromJson() {
    QFETCH(QString, source);
    QFETCH(QString, device);
    QFETCH(QList<quint64>, expected);
    DeviceModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setDevices(devices());
    const QJsonObject status{{"state", "ready"},
                             {"memory", QJsonArray{QJsonObject{{"device", "gpu0"}, {"weights", double(10 * GiB)},
                                                               {"kv", double(2 * GiB)}, {"scratch", double(GiB / 2)},
                                                               {"overhead", double(GiB / 4)}, {"total", 0},
                                                               {"capacity", double(24 * GiB)}}}}};
    auto snapshot = [](double timeNs, quint64 kvUsed) {
      return QJsonObject{{"lane", 0}, {"time_ns", timeNs}, {"weights", double(10 * GiB)}, {"kv_used", double(kvUsed)},
                         {"kv_reserved", double(2 * GiB)}, {"scratch", double(GiB)}, {"other", 0},
                         {"free", double(11 * GiB)}, {"total", double(24 * GiB)}};
    };
    if (source.startsWith("trace")) model.applyMemorySnapshot(lanesBatch(QJsonArray{snapshot(2e9, GiB)}));
    if (source == "trace+old") model.applyMemorySnapshot(lanesBatch(QJsonArray{snapshot(1e9, 5)}));
    if (source.endsWith("status")) model.setStatus(status);

    const QModelIndex i = model.index(model.rowOf(device));
    const QList<quint64> got{i.data(DeviceModel::CapacityRole).toULongLong(), i.data(DeviceModel::WeightsRole).toULongLong(),
                             i.data(DeviceModel::KvUsedRole).toULongLong(),   i.data(DeviceModel::KvReservedRole).toULongLong(),
                             i.data(DeviceModel::ScratchRole).toULongLong(),  i.data(DeviceModel::OtherRole).toULongLong(),
                             i.data(DeviceModel::FreeRole).toULongLong()};
    QCOMPARE(got, expected);
  }

  void simulatedLabelAndRoles() {
    DeviceModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setDevices(devices());
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(model.index(1).data(DeviceModel::SimulatedRole).toBool(), true);
    QVERIFY(model.index(1).data(Qt::DisplayRole).toString().contains("simulated"));
    QCOMPARE(model.index(0).data(DeviceModel::KindRole).toString(), QString("cpu"));
    model.setDevices(QJsonArray{devices()[1]});  // cpu gone: a reset
    QCOMPARE(model.rowCount(), 1);
    QCOMPARE(model.rowOf("gpu0"), 0);
  }

  void realGpuRoles_data() {
    QTest::addColumn<QString>("device");
    QTest::addColumn<QString>("computeCapability");
    QTest::addColumn<int>("ordinal");
    QTest::addColumn<QStringList>("peers");
    QTest::addColumn<bool>("failed");
    QTest::addColumn<QString>("failure");
    QTest::addColumn<QString>("display");
    QTest::addColumn<QStringList>("toolTipHas");  // substrings of the tooltip
    const QString sticky = "cudaStreamSynchronize failed: an illegal memory access was encountered";
    QTest::newRow("cuda with a peer") << "cuda0" << "9.0" << 0 << QStringList{"cuda1"} << false << "" << "NVIDIA H200"
                                      << QStringList{"CUDA device 0, compute capability 9.0", "peer access: cuda1"};
    QTest::newRow("the peer's peer") << "cuda1" << "9.0" << 1 << QStringList{"cuda0"} << false << "" << "NVIDIA H200"
                                     << QStringList{"CUDA device 1, compute capability 9.0", "peer access: cuda0"};
    QTest::newRow("failed cuda") << "cuda2" << "9.0" << 2 << QStringList{} << true << sticky << "NVIDIA H200 (failed)"
                                 << QStringList{"cuda2 failed: " + sticky, "peer access: none"};
    QTest::newRow("simulated") << "gpu0" << "" << -1 << QStringList{} << false << "" << "sim-gpu0 24 GiB (simulated)"
                               << QStringList{"simulated"};
    QTest::newRow("cpu without gpu fields") << "cpu" << "" << -1 << QStringList{} << false << "" << "CPU"
                                            << QStringList{"cpu — "};
  }
  void realGpuRoles() {
    QFETCH(QString, device);
    QFETCH(QString, computeCapability);
    QFETCH(int, ordinal);
    QFETCH(QStringList, peers);
    QFETCH(bool, failed);
    QFETCH(QString, failure);
    QFETCH(QString, display);
    QFETCH(QStringList, toolTipHas);
    DeviceModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setDevices(cudaDevices());
    QCOMPARE(model.rowCount(), 5);
    const int row = model.rowOf(device);
    QVERIFY(row >= 0);
    const QModelIndex i = model.index(row);
    QCOMPARE(i.data(DeviceModel::ComputeCapabilityRole).toString(), computeCapability);
    QCOMPARE(i.data(DeviceModel::OrdinalRole).toInt(), ordinal);
    QCOMPARE(i.data(DeviceModel::PeersRole).toStringList(), peers);
    QCOMPARE(i.data(DeviceModel::FailedRole).toBool(), failed);
    QCOMPARE(i.data(DeviceModel::FailureRole).toString(), failure);
    QCOMPARE(i.data(Qt::DisplayRole).toString(), display);
    const QString tip = i.data(Qt::ToolTipRole).toString();
    for (const QString& part : toolTipHas) QVERIFY2(tip.contains(part), qPrintable(tip));
    QCOMPARE(tip.contains("compute capability"), !computeCapability.isEmpty());
    QCOMPARE(tip.contains("failed"), failed);
    // The names QML and tests use for the new roles.
    const QHash<int, QByteArray> names = model.roleNames();
    QCOMPARE(names.value(DeviceModel::ComputeCapabilityRole), QByteArray("computeCapability"));
    QCOMPARE(names.value(DeviceModel::PeersRole), QByteArray("peers"));
    QCOMPARE(names.value(DeviceModel::FailureRole), QByteArray("failure"));
  }

  // A device list with the same ids updates in place: a device that fails turns failed, with its
  // reason, and keeps its memory figures.
  void deviceFailsInPlace() {
    DeviceModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setDevices(cudaDevices());
    QSignalSpy resets(&model, &QAbstractItemModel::modelReset);
    QSignalSpy changes(&model, &QAbstractItemModel::dataChanged);
    QJsonArray next = cudaDevices();
    QJsonObject first = next[0].toObject();
    first["failed"] = true;
    first["failure"] = "CUDA context lost";
    next[0] = first;
    model.setDevices(next);
    QCOMPARE(resets.count(), 0);
    QVERIFY(changes.count() >= 1);
    const QModelIndex i = model.index(0);
    QCOMPARE(i.data(DeviceModel::FailedRole).toBool(), true);
    QCOMPARE(i.data(DeviceModel::FailureRole).toString(), QString("CUDA context lost"));
    QCOMPARE(i.data(DeviceModel::CapacityRole).toULongLong(), 140 * GiB);
    QCOMPARE(i.data(DeviceModel::FreeRole).toULongLong(), 139 * GiB);
    // A failure text without failed is not a failure.
    first["failed"] = false;
    next[0] = first;
    model.setDevices(next);
    QCOMPARE(i.data(DeviceModel::FailedRole).toBool(), false);
    QCOMPARE(i.data(DeviceModel::FailureRole).toString(), QString());
  }

  // /strata/v1/status's lost_devices marks a row at once (without waiting for a device list).
  void statusMarksLostDevices() {
    DeviceModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setDevices(cudaDevices());
    const QString lostId = model.device(1).id;
    QVERIFY(!model.device(1).failed);
    QSignalSpy changes(&model, &QAbstractItemModel::dataChanged);
    model.setStatus(QJsonObject{{"memory", QJsonArray{}},
                                {"lost_devices", QJsonArray{QJsonObject{{"device", lostId}, {"failure", "did not answer within 60 s (hung; device timeout)"}},
                                                            QJsonObject{{"device", "no-such-device"}, {"failure", "x"}}}}});
    QCOMPARE(changes.count(), 1);
    QCOMPARE(model.index(1).data(DeviceModel::FailedRole).toBool(), true);
    QCOMPARE(model.index(1).data(DeviceModel::FailureRole).toString(), QString("did not answer within 60 s (hung; device timeout)"));
    QCOMPARE(model.index(0).data(DeviceModel::FailedRole).toBool(), false);
    QVERIFY(model.index(1).data(Qt::ToolTipRole).toString().contains("failed: did not answer"));
    // The same status again changes nothing.
    model.setStatus(QJsonObject{{"lost_devices", QJsonArray{QJsonObject{{"device", lostId}, {"failure", "other"}}}}});
    QCOMPARE(changes.count(), 1);
  }

  void barColours_data() {
    QTest::addColumn<bool>("simulated");
    QTest::newRow("real") << false;
    QTest::newRow("simulated") << true;
  }
  void barColours() {
    QFETCH(bool, simulated);
    // 1000 px bar, capacity 1000: weights 400, KV used 100, KV spare 100, scratch 100, other 100, free 200.
    MemoryBreakdown m;
    m.capacity = 1000;
    m.weights = 400;
    m.kvUsed = 100;
    m.kvReserved = 200;
    m.scratch = 100;
    m.other = 100;
    QCOMPARE(m.freeBytes(), 200ull);
    QImage image(1000, 20, QImage::Format_ARGB32);
    image.fill(Qt::white);
    {
      QPainter p(&image);
      paintMemoryBar(p, QRectF(0, 0, 1000, 20), m, simulated);
    }
    const QList<QPair<int, MemorySegment>> samples{{200, MemorySegment::Weights},  {450, MemorySegment::KvUsed},
                                                   {550, MemorySegment::KvReserved}, {650, MemorySegment::Scratch},
                                                   {750, MemorySegment::Other},      {900, MemorySegment::Free}};
    for (const auto& [x, segment] : samples) {
      int plain = 0, hatched = 0;
      for (int y = 3; y < 17; ++y) {
        const QColor c = image.pixelColor(x, y);
        (c == memorySegmentColor(segment) ? plain : hatched)++;
      }
      if (simulated) {
        QVERIFY2(plain > 0 && hatched > 0, qPrintable(memorySegmentName(segment)));  // hatch lines over the colour
      } else {
        QCOMPARE(plain, 14);
      }
    }
  }

  void delegatePaintsBar() {
    DevicesPanel panel;
    panel.resize(400, 300);
    panel.setDevices(devices());
    panel.applyMemorySnapshot(lanesBatch(QJsonArray{QJsonObject{{"lane", 1}, {"time_ns", 1.0}, {"weights", double(32 * GiB)},
                                                                {"kv_used", 0}, {"kv_reserved", 0}, {"scratch", 0},
                                                                {"other", 0}, {"free", double(32 * GiB)}, {"total", double(64 * GiB)}}}));
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QListView* view = panel.view();
    const QRect row = view->visualRect(panel.model()->index(0));
    const QRect bar = DeviceDelegate::barRect(row, view->fontMetrics());
    const QImage image = view->viewport()->grab().toImage();
    // The CPU: half weights, half free.
    QCOMPARE(image.pixelColor(bar.left() + bar.width() / 4, bar.center().y()), memorySegmentColor(MemorySegment::Weights));
    QCOMPARE(image.pixelColor(bar.left() + 3 * bar.width() / 4, bar.center().y()), memorySegmentColor(MemorySegment::Free));
  }

  // Real GPUs (one failed) paint their bars like any device: plain, not hatched.
  void delegatePaintsCudaRows() {
    DevicesPanel panel;
    panel.resize(400, 600);
    panel.setDevices(cudaDevices());
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QListView* view = panel.view();
    const QImage image = view->viewport()->grab().toImage();
    for (int row : {0, 2}) {  // cuda0, and cuda2 (failed)
      const QRect r = view->visualRect(panel.model()->index(row));
      const QRect bar = DeviceDelegate::barRect(r, view->fontMetrics());
      QVERIFY(image.rect().contains(bar.center()));
      // 1 of 140 GiB used by others: free from a few pixels in, and no hatch lines over it.
      for (int y = bar.top() + 3; y < bar.bottom() - 2; ++y)
        QCOMPARE(image.pixelColor(bar.left() + 3 * bar.width() / 4, y), memorySegmentColor(MemorySegment::Free));
    }
  }
};

QTEST_MAIN(TestDevicesModel)
#include "test_devices_model.moc"
