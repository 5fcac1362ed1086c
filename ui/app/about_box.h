// ui/app/about_box.h — Help ▸ About Strata: version, what the engine reports, licences of Qt and QCustomPlot.
#pragma once

#include <QJsonObject>

class QWidget;

void showAboutBox(QWidget* parent, const QJsonObject& engineStatus, const QString& engineText);
