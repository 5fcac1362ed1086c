// tests/ui/test_placement_json.cpp — placement JSON parsing/writing (docs/placement.md), the engine's
// estimate answer as the editor reads it, and the --devices spec written for declared simulated devices.
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

  // Placements as the engine writes them (`strata-engine plan --json`'s "placement" for a 4-block
  // qwen3moe model with 8 experts and stories260K: --experts-on-cpu 2, --override of FFN and
  // expert tensors, a placement file with expert ranges, kv_type f32): parsed and written back
  // unchanged, with the parts read into the fields they stand for.
  void engineJsonRoundTrips_data() {
    QTest::addColumn<QString>("json");
    QTest::addColumn<int>("nLayers");
    QTest::addColumn<int>("layer");        // a block to look at
    QTest::addColumn<QString>("ffnDevice");
    QTest::addColumn<QString>("experts");  // its ranges, "begin-end:device" (end -1: to the last)
    QTest::newRow("experts on cpu") << R"({"embedding":{"device":"gpu0"},"head":{"device":"gpu1"},"layers":[{"device":"gpu0","experts":"cpu","layers":"0-1"},{"device":"gpu1","layers":"2-3"}],"max_batch":256,"n_ctx":64,"n_seq":1,"version":1})"
                                    << 4 << 1 << "" << "0--1:cpu";
    QTest::newRow("dense ffn override") << R"({"embedding":{"device":"gpu0"},"head":{"device":"gpu1"},"layers":[{"device":"gpu0","layers":"0-1"},{"device":"gpu0","ffn_device":"cpu","layers":2},{"device":"gpu1","ffn_device":"cpu","layers":3},{"device":"gpu1","layers":4}],"max_batch":256,"n_ctx":64,"n_seq":1,"version":1})"
                                        << 5 << 3 << "cpu" << "";
    QTest::newRow("expert ranges") << R"({"embedding":{"device":"gpu0"},"head":{"device":"gpu1"},"layers":[{"device":"gpu0","experts":[{"device":"gpu0","experts":"0-3"},{"device":"cpu","experts":"4-"}],"layers":"0-1"},{"device":"gpu1","experts":"cpu","ffn_device":"gpu0","kv_device":"cpu","layers":2},{"device":"gpu1","experts":[{"device":"cpu","experts":"0"},{"device":"gpu0","experts":"1-6"},{"device":"gpu1","experts":"7"}],"layers":3}],"max_batch":256,"n_ctx":64,"n_seq":1,"version":1})"
                                   << 4 << 3 << "" << "0-1:cpu 1-7:gpu0 7-8:gpu1";
    QTest::newRow("ffn apart, kv_type") << R"({"embedding":{"device":"gpu0"},"head":{"device":"gpu1"},"kv_type":"f32","layers":[{"device":"gpu0","ffn_device":"gpu1","layers":0},{"device":"gpu0","layers":1},{"device":"gpu1","layers":"2-3"}],"max_batch":256,"n_ctx":64,"n_seq":1,"version":1})"
                                        << 4 << 0 << "gpu1" << "";
    QTest::newRow("swa_full") << R"({"embedding":{"device":"cpu"},"head":{"device":"cpu"},"layers":[{"device":"cpu","layers":"0-3"}],"max_batch":256,"n_ctx":64,"n_seq":1,"swa_full":true,"version":1})"
                              << 4 << 0 << "" << "";
    QTest::newRow("group, no parts") << R"({"embedding":{"device":"gpu0"},"head":{"device":"gpu1"},"layers":[{"group":["gpu0","gpu1"],"layers":"0-4","ratio":[1,1]}],"max_batch":256,"n_ctx":64,"n_seq":1,"version":1})"
                                     << 5 << 4 << "" << "";
  }
  void engineJsonRoundTrips() {
    QFETCH(QString, json);
    QFETCH(int, nLayers);
    QFETCH(int, layer);
    QFETCH(QString, ffnDevice);
    QFETCH(QString, experts);
    const QJsonObject engine = QJsonDocument::fromJson(json.toUtf8()).object();
    QVERIFY(!engine.isEmpty());
    QString error;
    const PlacementData p = PlacementData::fromJson(engine, nLayers, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QCOMPARE(p.layers[layer].ffnDevice, ffnDevice);
    QStringList ranges;
    for (const ExpertRange& r : p.layers[layer].experts) ranges << QStringLiteral("%1-%2:%3").arg(r.begin).arg(r.end).arg(r.device);
    QCOMPARE(ranges.join(' '), experts);
    QCOMPARE(QString::fromUtf8(QJsonDocument(p.toJson()).toJson(QJsonDocument::Compact)), json);
    // Written and parsed again: the same data.
    QCOMPARE(PlacementData::fromJson(p.toJson(), nLayers, &error), p);
  }

  void unknownFieldsStillRejected() {
    QJsonObject p = parse(R"({"version":1,"n_ctx":64,"embedding":{"device":"a"},"head":{"device":"a"},
        "layers":[{"layers":"0-1","device":"a"}]})");
    p["kv_typ"] = "f32";
    QString error;
    QCOMPARE(PlacementData::fromJson(p, 2, &error).layerCount(), 0);
    QCOMPARE(error, QString("placement: unknown field 'kv_typ'"));
    p.remove("kv_typ");
    p["kv_type"] = "q4_0";
    QCOMPARE(PlacementData::fromJson(p, 2, &error).layerCount(), 0);
    QCOMPARE(error, QString("KV cache type 'q4_0' is not one of f32, f16, q8_0"));
    p["kv_type"] = "F16";  // the default: not written back
    QVERIFY(PlacementData::fromJson(p, 2, &error).toJson().value("kv_type").isUndefined());
    p["swa_full"] = "yes";
    QCOMPARE(PlacementData::fromJson(p, 2, &error).layerCount(), 0);
    QCOMPARE(error, QString("placement: 'swa_full' must be true or false"));
    p["swa_full"] = false;  // the default: not written back
    QVERIFY(PlacementData::fromJson(p, 2, &error).toJson().value("swa_full").isUndefined());
    QVERIFY(!PlacementData::fromJson(p, 2, &error).swaFull);
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
                          << "layers[0]: unknown field 'kv_devce' (expected: layers, device, group, ratio, kv_device, ffn_device, experts)";
    QTest::newRow("ffn typo") << R"([{"layers":"0-9","device":"a","ffn_devce":"cpu"}])"
                              << "layers[0]: unknown field 'ffn_devce' (expected: layers, device, group, ratio, kv_device, ffn_device, experts)";
    QTest::newRow("experts range typo") << R"([{"layers":"0-9","device":"a","experts":[{"expert":"0-3","device":"cpu"}]}])"
                                        << "layers[0]: 'experts'[0]: unknown field 'expert' (expected: experts, device)";
    QTest::newRow("experts range without device") << R"([{"layers":"0-9","device":"a","experts":[{"experts":"0-3"}]}])"
                                                  << "layers[0]: 'experts'[0]: needs 'experts' and 'device'";
    QTest::newRow("experts empty") << R"([{"layers":"0-9","device":"a","experts":[]}])"
                                   << "layers[0]: 'experts' must be a device id or a non-empty array of "
                                      "{\"experts\": \"0-63\", \"device\": id}, not an array";
    QTest::newRow("experts backwards") << R"([{"layers":"0-9","device":"a","experts":[{"experts":"7-3","device":"a"}]}])"
                                       << "layers[0]: 'experts'[0]: expert: layer range '7-3' ends before it starts";
    QTest::newRow("ffn device number") << R"([{"layers":"0-9","device":"a","ffn_device":3}])"
                                       << "layers[0]: 'ffn_device' must be a device id string, not an integer";
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

  void engineAnswerParsed() {
    // An answer of /strata/v1/placement/estimate (gpu1 is not used; gpu9 is not among the editor's
    // devices): every device of the editor gets a row, the engine's numbers taken as they are.
    const QJsonObject answer = parse(R"({"fits":false,"error":"device 'gpu0': needs 3.0 KiB, has 2.0 KiB: short 1.0 KiB",
        "memory":{"devices":[{"device":"gpu0","weight_bytes":2000,"kv_bytes":500,"scratch_bytes":400,"overhead_bytes":100,
                              "total_bytes":3000,"capacity_bytes":2048,"fits":false,"shortfall_bytes":952},
                             {"device":"gpu9","weight_bytes":1,"kv_bytes":0,"scratch_bytes":0,"overhead_bytes":0,
                              "total_bytes":1,"capacity_bytes":10,"fits":true,"shortfall_bytes":0}]},
        "cost":{"decode_ms_per_token":0.5,"decode_tokens_per_s":2000,"prefill_tokens_per_s":50000,"boundaries":1,
                "transfer_bytes_per_token":256,"stages":[{},{}]}})");
    const QList<DeviceSpec> devices = DeviceSpec::listFromJson(QJsonArray{
        QJsonObject{{"id", "gpu0"}, {"bytes_total", 2048}}, QJsonObject{{"id", "gpu1"}, {"bytes_total", 4096}}});
    const EngineEstimate e = parseEstimate(answer, devices);
    QCOMPARE(e.memory.size(), 3);
    QCOMPARE(e.memory[0].device, QString("gpu0"));
    QCOMPARE(e.memory[0].weights, 2000ull);
    QCOMPARE(e.memory[0].kv, 500ull);
    QCOMPARE(e.memory[0].scratch, 400ull);
    QCOMPARE(e.memory[0].overhead, 100ull);
    QCOMPARE(e.memory[0].total, 3000ull);
    QCOMPARE(e.memory[0].shortfall, 952ull);
    QVERIFY(!e.memory[0].fits && e.memory[0].used);
    QCOMPARE(e.memory[1].device, QString("gpu1"));
    QCOMPARE(e.memory[1].total, 0ull);
    QCOMPARE(e.memory[1].capacity, 4096ull);
    QVERIFY(e.memory[1].fits && !e.memory[1].used);
    QCOMPARE(e.memory[2].device, QString("gpu9"));
    QVERIFY(!e.fits);
    QCOMPARE(e.error, QString("device 'gpu0': needs 3.0 KiB, has 2.0 KiB: short 1.0 KiB"));
    QVERIFY(e.hasCost);
    QCOMPARE(e.cost.decodeTokensPerS, 2000.0);
    QCOMPARE(e.cost.decodeMsPerToken, 0.5);
    QCOMPARE(e.cost.prefillTokensPerS, 50000.0);
    QCOMPARE(e.cost.stages, 2);
    QCOMPARE(e.cost.boundaries, 1);
    QCOMPARE(e.cost.transferBytesPerToken, 256ull);
    QVERIFY(!parseEstimate(parse(R"({"fits":true,"memory":{"devices":[]},"cost":null})"), devices).hasCost);
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
