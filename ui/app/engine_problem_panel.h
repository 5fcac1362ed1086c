// ui/app/engine_problem_panel.h — the panel above the tabs that says why no model is being served
// (the devices are too small for it, or the engine keeps failing the same way) and offers ways out:
// plan with other devices in the placement editor, change the devices in Settings, try again.
// Widgets only; MainWindow connects the buttons.
#pragma once

#include <QFrame>

class QLabel;
class QPushButton;

class EngineProblemPanel : public QFrame {
  Q_OBJECT
 public:
  explicit EngineProblemPanel(QWidget* parent = nullptr);

  // Empty hides the panel.
  void setProblem(const QString& problem);
  QString problem() const { return problem_; }
  QLabel* textLabel() const { return text_; }
  QPushButton* planButton() const { return plan_; }
  QPushButton* settingsButton() const { return settings_; }
  QPushButton* retryButton() const { return retry_; }

 signals:
  void planRequested();      // open the placement editor in planning mode
  void settingsRequested();  // choose other devices in Settings
  void retryRequested();     // restart the engine as it is

 protected:
  void paintEvent(QPaintEvent* event) override;  // a warm tint of the palette's window colour

 private:
  QString problem_;
  QLabel* title_;
  QLabel* text_;
  QPushButton* plan_;
  QPushButton* settings_;
  QPushButton* retry_;
};
