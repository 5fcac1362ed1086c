// ui/app/about_box.cpp — the About dialog's text.
#include "ui/app/about_box.h"

#include <QMessageBox>
#include <QtGlobal>

#ifndef STRATA_VERSION
#define STRATA_VERSION "dev"
#endif

void showAboutBox(QWidget* parent, const QJsonObject& engineStatus, const QString& engineText) {
  const QJsonObject model = engineStatus.value(QStringLiteral("model")).toObject();
  QString text = QObject::tr(
      "<h3>Strata %1</h3>"
      "<p>A desktop inference workstation: chat with a GGUF model, place its layers across GPUs and the CPU, "
      "and watch every device work, token by token.</p>"
      "<p>Engine: %2%3%5</p>"
      "<p>Built with Qt %4 (LGPLv3) and QCustomPlot (GPLv3).</p>")
                     .arg(QStringLiteral(STRATA_VERSION), engineText.toHtmlEscaped(),
                          model.isEmpty() ? QString()
                                          : QStringLiteral("<br>") + model.value(QStringLiteral("path")).toString().toHtmlEscaped(),
                          QString::fromLatin1(qVersion()),
                          engineStatus.contains(QStringLiteral("version"))
                              ? QStringLiteral("<br>strata-engine ") +
                                    engineStatus.value(QStringLiteral("version")).toString().toHtmlEscaped()
                              : QString());
  QMessageBox::about(parent, QObject::tr("About Strata"), text);
}
