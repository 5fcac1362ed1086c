// tests/ui/test_placement_json.cpp — placement JSON parsing/writing (docs/placement.md), the local
// cost model's exact figures and the --devices spec written for declared simulated devices.
#include <QCheckBox>
#include <QJsonArray>
#include <QJsonDocument>
#include <QtTest>

#include "ui/placement/placement_data.h"
#include "ui/placement/placement_estimate.h"
#include "ui/placement/simulated_devices.h"

using namespace strata::ui;

namespace {
QJsonObject parse(const char* text) { return QJsonDocument::fromJson(QByteArray(text)).object(); }
}  // namespace

class TestPlacementJson : public QObject {
  Q_OBJECT
 private slots:
  void docsExampleRoundTrips() {
    const QJsonObject doc = parse(R"({"embedding":{"device":"gpu0"},"head":{"device":"gpu1"},
        "layers":[{"device":"gpu0","layers":"0-17"},{"group":["gpu0","gpu1"],"layers":"18-20","ratio":[2,1]},
                  {"device":"cpu","kv_device":"cpu","layers":21}],
        "max_batch":256,"n_ctx":2048,"n_seq":1,"version":1})");
    QString error;
    const PlacementData p = PlacementData::fromJson(doc, 22, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QCOMPARE(p.layers[19].devices, (QStringList{"gpu0", "gpu1"}));
    QCOMPARE(p.layers[19].fraction(0), 2.0 / 3.0);
    QCOMPARE(p.toJson(), doc);
    // Entries in any order and single-block entries merge into ranges.
    const QJsonObject scattered = parse(R"({"version":1,"n_ctx":2048,"embedding":{"device":"gpu0"},"head":{"device":"gpu1"},
        "layers":[{"layers":21,"device":"cpu","kv_device":"cpu"},{"layers":"18-20","group":["gpu0","gpu1"],"ratio":[2,1]},
                  {"layers":"0-9","device":"gpu0"},{"layers":"10-17","device":"gpu0"}]})");
    QCOMPARE(PlacementData::fromJson(scattered, 22, &error).toJson(), doc);
  }

  void errors_data() {
    QTest::addColumn<QString>("layers");
    QTest::addColumn<QString>("message");
    QTest::newRow("overlap") << R"([{"layers":"0-6","device":"a"},{"layers":"5-9","device":"a"}])"
                             << "layers[1]: layers 5-9 overlap layers 0-6 at layer 5";
    QTest::newRow("missing one") << R"([{"layers":"0-8","device":"a"}])" << "layer 9 of 10 has no placement";
    QTest::newRow("missing range") << R"([{"layers":"0-7","device":"a"}])" << "layers 8-9 of 10 have no placement";
    QTest::newRow("out of range") << R"([{"layers":"0-10","device":"a"}])"
                                  << "layers[0]: layers 0-10 out of range: the model has 10 layers (0-9)";
    QTest::newRow("backwards") << R"([{"layers":"9-3","device":"a"}])" << "layers[0]: layer range '9-3' ends before it starts";
    QTest::newRow("ratio") << R"([{"layers":"0-9","group":["a","b"],"ratio":[1,-2]}])"
                           << "layers[0]: 'ratio'[1] is -2 for device 'b'; ratios must be > 0";
    QTest::newRow("group of one") << R"([{"layers":"0-9","group":["a"]}])" << "layers[0]: a 'group' needs at least 2 devices, has 1";
    QTest::newRow("typo") << R"([{"layers":"0-9","device":"a","kv_devce":"cpu"}])"
                          << "layers[0]: unknown field 'kv_devce' (expected: layers, device, group, ratio, kv_device)";
    QTest::newRow("both") << R"([{"layers":"0-9","device":"a","group":["a","b"]}])"
                          << "layers[0]: give either 'device' or 'group', not both";
  }
  void errors() {
    QFETCH(QString, layers);
    QFETCH(QString, message);
    QJsonObject p = parse(R"({"version":1,"n_ctx":64,"embedding":{"device":"a"},"head":{"device":"a"}})");
    p["layers"] = QJsonDocument::fromJson(layers.toUtf8()).array();
    QString error;
    const PlacementData result = PlacementData::fromJson(p, 10, &error);
    QCOMPARE(error, message);
    QCOMPARE(result.layerCount(), 0);
  }

  void costModel_data() {
    QTest::addColumn<QString>("placement");
    QTest::addColumn<double>("msPerToken");
    QTest::addColumn<int>("boundaries");
    QTest::addColumn<quint64>("transferBytes");
    // 2 blocks of 1e9 B, head 5e8 B, n_embd 4096 (16 KiB hidden state); gpu0 1000 GB/s, gpu1 500 GB/s
    // with a 25 GB/s link; latency 10 us per transfer.
    QTest::newRow("one device") << R"({"layers":[{"layers":"0-1","device":"gpu0"}],"head":{"device":"gpu0"}})"
                                << 2.5 << 0 << quint64(0);
    // gpu0 1 ms; boundary 16384 B / 25e9 + 0.01 ms; gpu1 (1e9 + 5e8) / 5e11 = 3 ms.
    QTest::newRow("two stages") << R"({"layers":[{"layers":0,"device":"gpu0"},{"layers":1,"device":"gpu1"}],"head":{"device":"gpu1"}})"
                                << 1.0 + 16384.0 / 25e9 * 1e3 + 0.01 + 3.0 << 1 << quint64(16384);
    // Group 1:1: each member 5e8 B; the slower (gpu1) 1 ms per block + 2 all-reduces of 16 KiB each;
    // head on gpu0 0.5 ms; the embedding's gpu0 -> group boundary adds gpu1: one transfer.
    QTest::newRow("tensor group") << R"({"layers":[{"layers":"0-1","group":["gpu0","gpu1"]}],"head":{"device":"gpu0"}})"
                                  << 2 * (1.0 + 2 * (16384.0 / 25e9 * 1e3 + 0.01)) + 16384.0 / 25e9 * 1e3 + 0.01 + 0.5
                                  << 1 << quint64(4 * 16384 + 16384);
  }
  void costModel() {
    QFETCH(QString, placement);
    QFETCH(double, msPerToken);
    QFETCH(int, boundaries);
    QFETCH(quint64, transferBytes);
    ModelInfo model = ModelInfo::fromJson(QJsonObject{{"n_layers", 2}, {"layer_bytes", 1e9}, {"head_bytes", 5e8},
                                                      {"embedding_bytes", 0}, {"n_embd", 4096}});
    const QList<DeviceSpec> devices = DeviceSpec::listFromJson(QJsonArray{
        QJsonObject{{"id", "gpu0"}, {"bytes_total", 1e12}, {"bandwidth_gbps", 1000}},
        QJsonObject{{"id", "gpu1"}, {"bytes_total", 1e12}, {"bandwidth_gbps", 500}, {"link_gbps", 25}}});
    QJsonObject json = QJsonDocument::fromJson(placement.toUtf8()).object();
    json["version"] = 1;
    json["n_ctx"] = 16;
    json["embedding"] = QJsonObject{{"device", "gpu0"}};
    QString error;
    const PlacementData p = PlacementData::fromJson(json, 2, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    const CostPrediction c = predictCost(p, model, devices);
    QCOMPARE(c.decodeMsPerToken, msPerToken);
    QCOMPARE(c.decodeTokensPerS, 1000.0 / msPerToken);
    QCOMPARE(c.boundaries, boundaries);
    QCOMPARE(c.transferBytesPerToken, transferBytes);
  }

  void devicesSpec_data() {
    QTest::addColumn<QStringList>("presets");  // preset model names
    QTest::addColumn<bool>("cpu");
    QTest::addColumn<QString>("spec");
    QTest::newRow("4090 + 3060") << QStringList{"RTX 4090", "RTX 3060"} << true
                                 << "cpu,sim:gpu0:24GiB:bw=1008GB/s:tflops=165,sim:gpu1:12GiB:bw=360GB/s:tflops=25";
    QTest::newRow("A100 alone") << QStringList{"A100 80 GB"} << false << "sim:gpu0:80GiB:bw=2039GB/s:tflops=312";
  }
  void devicesSpec() {
    QFETCH(QStringList, presets);
    QFETCH(bool, cpu);
    QFETCH(QString, spec);
    SimulatedDevicesWidget widget;
    for (const QString& name : presets)
      for (int i = 0; i < gpuPresets().size(); ++i)
        if (gpuPresets()[i].model == name) widget.addPreset(i);
    widget.findChild<QCheckBox*>()->setChecked(cpu);
    QSignalSpy declared(&widget, &SimulatedDevicesWidget::devicesDeclared);
    QSignalSpy json(&widget, &SimulatedDevicesWidget::devicesJsonChanged);
    widget.declare();
    QCOMPARE(declared.count(), 1);
    QCOMPARE(declared.first().first().toString(), spec);
    const QJsonArray devices = json.first().first().toJsonArray();
    QCOMPARE(devices.size(), presets.size() + (cpu ? 1 : 0));
    QCOMPARE(devices.last().toObject().value("simulated").toBool(), true);
  }

  void devicesSpecErrors() {
    QString error;
    QCOMPARE(strata::ui::devicesSpec({{"gpu0", 1ull << 30, 0, 0, {}}, {"gpu0", 1ull << 30, 0, 0, {}}}, true, &error), QString());
    QCOMPARE(error, QString("device name 'gpu0' is used twice"));
    QCOMPARE(strata::ui::devicesSpec({{"my gpu", 1ull << 30, 0, 0, {}}}, true, &error), QString());
    QCOMPARE(error, QString("device name 'my gpu' must be letters, digits, '-' or '_'"));
    QCOMPARE(strata::ui::devicesSpec({{"g", 1536ull << 20, 0, 0, {}}}, false, &error), QString("sim:g:1536MiB"));
  }
};

QTEST_MAIN(TestPlacementJson)
#include "test_placement_json.moc"
