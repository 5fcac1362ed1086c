// tests/ui/test_model_inspect.cpp — EngineClient::inspectModel, ModelInspector's one-at-a-time queue
// and cache, and ModelFilesModel's inspection roles, against the fake engine.
#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTest>

#include "fake_engine.h"
#include "ui/client/engine_client.h"
#include "ui/models/model_files_model.h"
#include "ui/models/model_inspector.h"

class TestModelInspect : public QObject {
  Q_OBJECT
 private slots:
  void clientCall() {
    FakeEngine engine;
    EngineClient client;
    client.setEndpoint(QUrl(engine.url()), {});
    EngineResult got;
    bool done = false;
    client.inspectModel(QStringLiteral("/models/a.gguf"), 1024, this, [&](const EngineResult& r) {
      got = r;
      done = true;
    });
    QTRY_VERIFY(done);
    QVERIFY2(got.ok(), qPrintable(got.error));
    QCOMPARE(engine.inspectBodies.size(), 1);
    QCOMPARE(engine.inspectBodies[0].value("path").toString(), QStringLiteral("/models/a.gguf"));
    QCOMPARE(engine.inspectBodies[0].value("n_ctx").toInt(), 1024);
    QCOMPARE(got.object().value("memory").toObject().value("kv").toInteger(), qint64(1024) * 1024);
  }

  void rolesAndCache() {
    FakeEngine engine;
    EngineClient client;
    client.setEndpoint(QUrl(engine.url()), {});
    ModelFilesModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    m.setFiles({{QStringLiteral("/models/a.gguf"), QStringLiteral("a.gguf"), 1000000, QStringLiteral("added"), {}},
                {QStringLiteral("/models/bad.gguf"), QStringLiteral("bad.gguf"), 10, QStringLiteral("added"), {}}});
    m.setContextLength(4096);
    QCOMPARE(m.index(0, 0).data(ModelFilesModel::InspectedRole).toBool(), false);
    QVERIFY(!m.index(0, 0).data(ModelFilesModel::ArchitectureRole).isValid());

    ModelInspector inspector(&client, &m);
    QSignalSpy idle(&inspector, &ModelInspector::idle);
    inspector.request(0);
    inspector.request(1);
    inspector.request(0);  // queued or in flight already: no second request
    QVERIFY(inspector.isBusy());
    QCOMPARE(engine.inspectBodies.size(), 0);  // nothing sent synchronously beyond the one in flight
    QTRY_VERIFY(m.index(1, 0).data(ModelFilesModel::InspectedRole).toBool());
    QTRY_VERIFY(!inspector.isBusy());
    QCOMPARE(engine.inspectBodies.size(), 2);
    QCOMPARE(engine.inspectBodies[0].value("n_ctx").toInt(), 4096);

    const QModelIndex a = m.index(0, 0);
    QCOMPARE(a.data(ModelFilesModel::ArchitectureRole).toString(), QStringLiteral("llama"));
    QCOMPARE(a.data(ModelFilesModel::ParametersRole).toLongLong(), qint64(260000));
    QCOMPARE(a.data(ModelFilesModel::TensorTypesRole).toStringList(), (QStringList{"q4_k", "f32"}));
    QCOMPARE(a.data(ModelFilesModel::ContextTrainRole).toInt(), 2048);
    QCOMPARE(a.data(ModelFilesModel::MemoryBytesRole).toLongLong(), qint64(901000 + 4096 * 1024 + 4096));
    QCOMPARE(a.data(ModelFilesModel::RunnableRole).toBool(), true);
    QCOMPARE(a.data(ModelFilesModel::InspectErrorRole).toString(), QString());
    QCOMPARE(m.index(0, ModelFilesModel::ArchitectureColumn).data().toString(), QStringLiteral("llama"));
    QCOMPARE(m.index(0, ModelFilesModel::ParametersColumn).data().toString(), QStringLiteral("260 K"));
    QCOMPARE(m.index(0, ModelFilesModel::TypesColumn).data().toString(), QStringLiteral("q4_k, f32"));
    QCOMPARE(m.index(0, ModelFilesModel::ContextColumn).data().toString(), QStringLiteral("2048"));
    QCOMPARE(m.index(0, ModelFilesModel::MemoryColumn).data().toString(), ModelFilesModel::formatSize(901000 + 4096 * 1024 + 4096));

    const QModelIndex bad = m.index(1, 0);
    QCOMPARE(bad.data(ModelFilesModel::InspectErrorRole).toString(), QStringLiteral("not a GGUF file"));
    QVERIFY(!bad.data(ModelFilesModel::ArchitectureRole).isValid());

    // Cached: asking again sends nothing.
    inspector.request(0);
    inspector.request(1);
    QVERIFY(!inspector.isBusy());
    QCOMPARE(engine.inspectBodies.size(), 2);

    // Another context: not cached for it; asked again with the new n_ctx.
    QSignalSpy changed(&m, &QAbstractItemModel::dataChanged);
    m.setContextLength(512);
    QVERIFY(changed.count() >= 1);
    QCOMPARE(a.data(ModelFilesModel::InspectedRole).toBool(), false);
    inspector.request(0, true);
    QTRY_VERIFY(a.data(ModelFilesModel::InspectedRole).toBool());
    QCOMPARE(engine.inspectBodies.size(), 3);
    QCOMPARE(engine.inspectBodies[2].value("n_ctx").toInt(), 512);
    QCOMPARE(a.data(ModelFilesModel::MemoryBytesRole).toLongLong(), qint64(901000 + 512 * 1024 + 4096));
    QVERIFY(idle.count() >= 1);

    // Back to the first context: still cached.
    m.setContextLength(4096);
    QCOMPARE(a.data(ModelFilesModel::ContextTrainRole).toInt(), 2048);
  }

  void noEngineIsNotCached() {
    EngineClient client;  // no endpoint
    ModelFilesModel m;
    m.setFiles({{QStringLiteral("/models/a.gguf"), QStringLiteral("a.gguf"), 1, QStringLiteral("added"), {}}});
    ModelInspector inspector(&client, &m);
    inspector.request(0);
    QCOMPARE(inspector.queued(), 1);  // waits for an engine
    FakeEngine engine;
    client.setEndpoint(QUrl(engine.url()), {});
    QTRY_VERIFY(m.index(0, 0).data(ModelFilesModel::InspectedRole).toBool());
    QCOMPARE(engine.inspectBodies.size(), 1);
  }
};

QTEST_MAIN(TestModelInspect)
#include "test_model_inspect.moc"
