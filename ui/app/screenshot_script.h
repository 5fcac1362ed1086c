// ui/app/screenshot_script.h — drives the running app for tools/screenshots.sh: waits for the engine,
// applies a split placement across the first two accelerators, sends a prompt, waits for the reply
// and saves PNGs (chat, placement editor, profiler) with QWidget::grab(), then quits.
#pragma once

#include <QObject>
#include <QString>
#include <functional>

class MainWindow;

class ScreenshotScript : public QObject {
  Q_OBJECT
 public:
  ScreenshotScript(MainWindow* window, const QString& outDir, const QString& prompt, QObject* parent = nullptr);
  void start();  // asynchronous; exits the application when done (code 0, or 1 on failure)

 private:
  void step(int n);
  void waitFor(std::function<bool()> done, int timeoutMs, int next, const QString& what);
  bool save(QWidget* w, const QString& name);
  void fail(const QString& why);

  MainWindow* window_;
  QString outDir_;
  QString prompt_;
  bool replyDone_ = false;
  bool devicesSeen_ = false;
  bool applied_ = false;
  int traceBatches_ = 0;
  bool duringReplySaved_ = false;
  QString suffix_;  // "-scale1.5" under QT_SCALE_FACTOR 1.5
};
