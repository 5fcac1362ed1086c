// ui/app/settings_dialog.h — File ▸ Settings: the engine (local child with its options, or a remote
// URL + key), chat defaults for new conversations, and the theme. Edits a copy of AppSettings.
#pragma once

#include <QDialog>

#include "ui/app/app_settings.h"

class QComboBox;
class QLineEdit;
class QPlainTextEdit;
class QRadioButton;
class QSpinBox;
class SamplingBar;

class SettingsDialog : public QDialog {
  Q_OBJECT
 public:
  SettingsDialog(const AppSettings& settings, QWidget* parent = nullptr);
  AppSettings settings() const;  // the edited copy

 private:
  AppSettings base_;
  QRadioButton* local_;
  QRadioButton* remote_;
  QLineEdit* enginePath_;
  QLineEdit* devices_;
  QSpinBox* ctx_;
  QSpinBox* threads_;
  QLineEdit* draftModel_;
  QLineEdit* remoteUrl_;
  QLineEdit* remoteKey_;
  QPlainTextEdit* systemPrompt_;
  SamplingBar* sampling_;
  QComboBox* theme_;
};
