// ui/app/theme.h — light and dark palettes on the Fusion style, or the system's palette ("system",
// the default: whatever the platform theme says, followed when it changes).
#pragma once

#include <QString>

class QApplication;

namespace theme {
// mode: "system" | "light" | "dark". Call once at start and whenever the setting changes.
void apply(QApplication& app, const QString& mode);
bool isDark();  // the palette now in use has a dark window colour
}  // namespace theme
