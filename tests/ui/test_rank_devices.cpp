// tests/ui/test_rank_devices.cpp — the devices panel's model and the placement editor's model fed
// what /strata/v1/devices answers under mpirun (ids prefixed by rank: "r0:cpu", "r1:cpu",
// "r1:gpu0", "r1:cuda0", each with its rank and host): one row and one lane per device, rows told
// apart by rank, /status memory matched by the prefixed id, and drops onto a rank-1 device (a lane,
// a range, a tensor group across ranks) giving the placement JSON the engine reads. No engine:
// the JSON is the engine's shape, written out here. Model testers on both models.
#include <QAbstractItemModelTester>
#include <QJsonArray>
#include <QJsonDocument>
#include <QMimeData>
#include <QtTest>

#include "ui/devices/device_model.h"
#include "ui/placement/placement_model.h"

using namespace strata::ui;

namespace {

constexpr quint64 GiB = 1ull << 30;

// Two hosts: rank 0 a CPU on host-a; rank 1 a CPU, a simulated GPU and a CUDA GPU on host-b.
QJsonArray rankDevices() {
  auto device = [](const QString& id, const QString& kind, const QString& name, quint64 total, quint64 free, int rank,
                   const QString& host) {
    return QJsonObject{{"id", id},
                       {"kind", kind},
                       {"name", name},
                       {"simulated", kind == "sim"},
                       {"bytes_total", double(total)},
                       {"bytes_free", double(free)},
                       {"compute_capability", kind == "cuda" ? "9.0" : ""},
                       {"ordinal", kind == "cuda" ? 0 : -1},
                       {"peers", QJsonArray{}},
                       {"failed", false},
                       {"failure", ""},
                       {"rank", rank},
                       {"host", host}};
  };
  return QJsonArray{device("r0:cpu", "cpu", "CPU", 64 * GiB, 60 * GiB, 0, "host-a"),
                    device("r1:cpu", "cpu", "CPU", 32 * GiB, 30 * GiB, 1, "host-b"),
                    device("r1:gpu0", "sim", "sim-gpu0 8 GiB (simulated)", 8 * GiB, 8 * GiB, 1, "host-b"),
                    device("r1:cuda0", "cuda", "NVIDIA H200", 140 * GiB, 139 * GiB, 1, "host-b")};
}

// Four blocks of 1 MiB, a 2 MiB embedding and head: the /status "model" fields the editor reads.
QJsonObject modelInfo() {
  return QJsonObject{{"name", "ranked"},
                     {"n_layers", 4},
                     {"layer_bytes", double(1 << 20)},
                     {"embedding_bytes", double(2 << 20)},
                     {"head_bytes", double(2 << 20)}};
}

// Everything on rank 0's CPU.
QJsonObject allOnRank0() {
  return QJsonDocument::fromJson(R"({"version":1,"n_ctx":256,"n_seq":1,"max_batch":256,
      "embedding":{"device":"r0:cpu"},"head":{"device":"r0:cpu"},
      "layers":[{"layers":"0-3","device":"r0:cpu"}]})")
      .object();
}

QString compact(const QJsonValue& v) {
  return QString::fromUtf8(v.isArray() ? QJsonDocument(v.toArray()).toJson(QJsonDocument::Compact)
                                       : QJsonDocument(v.toObject()).toJson(QJsonDocument::Compact));
}

}  // namespace

class TestRankDevices : public QObject {
  Q_OBJECT
 private slots:
  void deviceRows_data() {
    QTest::addColumn<int>("row");
    QTest::addColumn<QString>("id");
    QTest::addColumn<QString>("display");
    QTest::addColumn<int>("rank");
    QTest::addColumn<QString>("host");
    QTest::addColumn<quint64>("capacity");
    QTest::addColumn<quint64>("freeBytes");
    QTest::newRow("r0 cpu") << 0 << "r0:cpu" << "r0: CPU" << 0 << "host-a" << 64 * GiB << 60 * GiB;
    QTest::newRow("r1 cpu") << 1 << "r1:cpu" << "r1: CPU" << 1 << "host-b" << 32 * GiB << 30 * GiB;
    QTest::newRow("r1 sim gpu") << 2 << "r1:gpu0" << "r1: sim-gpu0 8 GiB (simulated)" << 1 << "host-b" << 8 * GiB
                                << 8 * GiB;
    QTest::newRow("r1 cuda") << 3 << "r1:cuda0" << "r1: NVIDIA H200" << 1 << "host-b" << 140 * GiB << 139 * GiB;
  }

  void deviceRows() {
    QFETCH(int, row);
    QFETCH(QString, id);
    QFETCH(QString, display);
    QFETCH(int, rank);
    QFETCH(QString, host);
    QFETCH(quint64, capacity);
    QFETCH(quint64, freeBytes);
    DeviceModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setDevices(rankDevices());
    QCOMPARE(model.rowCount(), 4);
    const QModelIndex i = model.index(row);
    QCOMPARE(model.data(i, DeviceModel::IdRole).toString(), id);
    // Both ranks have a "CPU": the rank prefix tells the rows apart.
    QCOMPARE(model.data(i, Qt::DisplayRole).toString(), display);
    QCOMPARE(model.data(i, DeviceModel::RankRole).toInt(), rank);
    QCOMPARE(model.data(i, DeviceModel::HostRole).toString(), host);
    QCOMPARE(model.data(i, DeviceModel::CapacityRole).toULongLong(), capacity);
    QCOMPARE(model.data(i, DeviceModel::FreeRole).toULongLong(), freeBytes);
    const QString tip = model.data(i, Qt::ToolTipRole).toString();
    QVERIFY2(tip.contains(QStringLiteral("rank %1 of the engine, on host %2").arg(rank).arg(host)), qPrintable(tip));
  }

  // One process: no host, no prefix (the rows read as before).
  void oneProcessRowsHaveNoRankPrefix() {
    DeviceModel model;
    model.setDevices(QJsonArray{QJsonObject{{"id", "cpu"}, {"kind", "cpu"}, {"name", "CPU"},
                                            {"bytes_total", double(GiB)}, {"rank", 0}, {"host", ""}}});
    QCOMPARE(model.data(model.index(0), Qt::DisplayRole).toString(), QString("CPU"));
    QCOMPARE(model.data(model.index(0), DeviceModel::HostRole).toString(), QString());
  }

  // /status's memory for rank 1's CPU (what rank 1 reported after placing) lands on its row.
  void statusMemoryByRankPrefixedId() {
    DeviceModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setDevices(rankDevices());
    const QJsonObject status{
        {"state", "ready"},
        {"memory", QJsonArray{QJsonObject{{"device", "r1:cpu"}, {"weights", double(3 * GiB)}, {"kv", double(GiB)},
                                          {"scratch", double(GiB / 2)}, {"overhead", 0.0},
                                          {"total", double(4 * GiB + GiB / 2)}, {"capacity", double(32 * GiB)}}}}};
    model.setStatus(status);
    const QModelIndex r1 = model.index(1);
    QCOMPARE(model.data(r1, DeviceModel::WeightsRole).toULongLong(), 3 * GiB);
    QCOMPARE(model.data(r1, DeviceModel::KvReservedRole).toULongLong(), GiB);
    QCOMPARE(model.data(r1, DeviceModel::ScratchRole).toULongLong(), GiB / 2);
    QCOMPARE(model.data(r1, DeviceModel::FreeRole).toULongLong(), 32 * GiB - 4 * GiB - GiB / 2);
    // Rank 0's CPU is untouched by rank 1's figures.
    QCOMPARE(model.data(model.index(0), DeviceModel::WeightsRole).toULongLong(), 0ull);
  }

  void dropOntoRank1_data() {
    QTest::addColumn<QString>("lane");        // a device id, or "group:ID,ID" for a tensor-group lane
    QTest::addColumn<int>("firstTile");       // 0 embedding, 1..4 blocks 0-3, 5 head
    QTest::addColumn<int>("lastTile");
    QTest::addColumn<QString>("placement");   // the placement JSON after the drop (compact)
    QTest::newRow("one block onto r1:cpu")
        << "r1:cpu" << 2 << 2
        << R"({"embedding":{"device":"r0:cpu"},"head":{"device":"r0:cpu"},"layers":[{"device":"r0:cpu","layers":0},{"device":"r1:cpu","layers":1},{"device":"r0:cpu","layers":"2-3"}],"max_batch":256,"n_ctx":256,"n_seq":1,"version":1})";
    QTest::newRow("blocks and head onto r1:gpu0")
        << "r1:gpu0" << 3 << 5
        << R"({"embedding":{"device":"r0:cpu"},"head":{"device":"r1:gpu0"},"layers":[{"device":"r0:cpu","layers":"0-1"},{"device":"r1:gpu0","layers":"2-3"}],"max_batch":256,"n_ctx":256,"n_seq":1,"version":1})";
    QTest::newRow("every block onto r1:cuda0")
        << "r1:cuda0" << 1 << 4
        << R"({"embedding":{"device":"r0:cpu"},"head":{"device":"r0:cpu"},"layers":[{"device":"r1:cuda0","layers":"0-3"}],"max_batch":256,"n_ctx":256,"n_seq":1,"version":1})";
    QTest::newRow("tensor group across ranks")
        << "group:r0:cpu,r1:cpu" << 1 << 2
        << R"({"embedding":{"device":"r0:cpu"},"head":{"device":"r0:cpu"},"layers":[{"group":["r0:cpu","r1:cpu"],"layers":"0-1","ratio":[1,1]},{"device":"r0:cpu","layers":"2-3"}],"max_batch":256,"n_ctx":256,"n_seq":1,"version":1})";
  }

  void dropOntoRank1() {
    QFETCH(QString, lane);
    QFETCH(int, firstTile);
    QFETCH(int, lastTile);
    QFETCH(QString, placement);
    PlacementModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setDevices(rankDevices());
    model.setModelInfo(modelInfo());
    QString error;
    QVERIFY2(model.resetPlacement(allOnRank0(), &error), qPrintable(error));
    // The model column and one lane per device of every rank, headed by its prefixed id.
    QCOMPARE(model.columnCount(), 5);
    QCOMPARE(model.rowCount(), 6);
    for (const QString& id : {QStringLiteral("r0:cpu"), QStringLiteral("r1:cpu"), QStringLiteral("r1:gpu0"),
                              QStringLiteral("r1:cuda0")}) {
      const int column = model.laneOfDevice(id);
      QVERIFY2(column > 0, qPrintable(id));
      QVERIFY(model.headerData(column, Qt::Horizontal, Qt::DisplayRole).toString().startsWith(id + '\n'));  // id, size, ... a line each
    }
    int column = -1;
    if (lane.startsWith(QLatin1String("group:"))) {
      // "group:r0:cpu,r1:cpu": the ids themselves hold colons, so split after the prefix only.
      column = model.addGroupLane(lane.mid(6).split(','), {1.0, 1.0});
    } else {
      column = model.laneOfDevice(lane);
    }
    QVERIFY(column > 0);
    std::unique_ptr<QMimeData> mime(PlacementModel::makeMime(firstTile, lastTile));
    const QModelIndex target = model.index(1, column);
    QVERIFY(model.canDropMimeData(mime.get(), Qt::MoveAction, -1, column, target));
    QVERIFY2(model.dropMimeData(mime.get(), Qt::MoveAction, -1, column, target), qPrintable(model.lastError()));
    QCOMPARE(compact(model.placementJson()), placement);
    // The dropped tiles show as placed on the rank-1 lane.
    for (int tile = firstTile; tile <= lastTile; ++tile)
      QVERIFY(model.data(model.index(tile, column), PlacementModel::PlacedRole).toBool() ||
              lane.startsWith(QLatin1String("group:")));
    QCOMPARE(model.undoStack()->count(), 1);
    model.undoStack()->undo();
    QCOMPARE(compact(model.placementJson()), compact(allOnRank0()));
  }
};

QTEST_MAIN(TestRankDevices)
#include "test_rank_devices.moc"
