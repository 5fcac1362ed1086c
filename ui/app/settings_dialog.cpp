// ui/app/settings_dialog.cpp — the settings form.
#include "ui/app/settings_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QRadioButton>
#include <QSpinBox>
#include <QTabWidget>
#include <QVBoxLayout>

#include "ui/chat/sampling_bar.h"

SettingsDialog::SettingsDialog(const AppSettings& s, QWidget* parent) : QDialog(parent), base_(s) {
  setWindowTitle(tr("Settings"));
  auto* tabs = new QTabWidget(this);

  auto* engine = new QWidget(tabs);
  auto* ef = new QFormLayout(engine);
  local_ = new QRadioButton(tr("Run a local engine (child process on loopback, random key)"), engine);
  remote_ = new QRadioButton(tr("Attach to an engine on another machine"), engine);
  (s.engineMode == AppSettings::EngineMode::Remote ? remote_ : local_)->setChecked(true);
  ef->addRow(local_);
  enginePath_ = new QLineEdit(s.enginePath, engine);
  enginePath_->setPlaceholderText(tr("found automatically"));
  ef->addRow(tr("strata-engine:"), enginePath_);
  devices_ = new QLineEdit(s.devices, engine);
  devices_->setPlaceholderText(tr("all devices found, e.g. cpu,sim:gpu0:24GiB"));
  ef->addRow(tr("Devices:"), devices_);
  ctx_ = new QSpinBox(engine);
  ctx_->setRange(0, 1 << 24);
  ctx_->setSpecialValueText(tr("automatic (the model's, at most 4096)"));
  ctx_->setValue(s.ctx);
  ef->addRow(tr("Context:"), ctx_);
  threads_ = new QSpinBox(engine);
  threads_->setRange(0, 1024);
  threads_->setSpecialValueText(tr("all cores"));
  threads_->setValue(s.threads);
  ef->addRow(tr("CPU threads:"), threads_);
  draftModel_ = new QLineEdit(s.draftModel, engine);
  draftModel_->setObjectName(QStringLiteral("draftModel"));
  draftModel_->setPlaceholderText(tr("none: chats may still speculate by prompt lookup"));
  draftModel_->setToolTip(tr("A small GGUF with the model's vocabulary that guesses tokens for speculative decoding "
                             "(it runs on the CPU); the replies stay the same, only faster when it guesses well"));
  ef->addRow(tr("Draft model:"), draftModel_);
  ef->addRow(remote_);
  remoteUrl_ = new QLineEdit(s.remoteUrl, engine);
  remoteUrl_->setPlaceholderText(QStringLiteral("http://host:8080"));
  ef->addRow(tr("URL:"), remoteUrl_);
  remoteKey_ = new QLineEdit(s.remoteKey, engine);
  remoteKey_->setEchoMode(QLineEdit::Password);
  ef->addRow(tr("API key:"), remoteKey_);
  auto syncEnabled = [this] {
    const bool r = remote_->isChecked();
    for (QWidget* w : {static_cast<QWidget*>(enginePath_), static_cast<QWidget*>(devices_),
                       static_cast<QWidget*>(ctx_), static_cast<QWidget*>(threads_), static_cast<QWidget*>(draftModel_)})
      w->setEnabled(!r);
    remoteUrl_->setEnabled(r);
    remoteKey_->setEnabled(r);
  };
  connect(remote_, &QRadioButton::toggled, this, syncEnabled);
  syncEnabled();
  tabs->addTab(engine, tr("&Engine"));

  auto* chat = new QWidget(tabs);
  auto* cf = new QFormLayout(chat);
  systemPrompt_ = new QPlainTextEdit(s.defaultSystemPrompt, chat);
  systemPrompt_->setPlaceholderText(tr("none"));
  cf->addRow(tr("System prompt:"), systemPrompt_);
  sampling_ = new SamplingBar(chat);
  sampling_->setSampling(s.defaultSampling);
  cf->addRow(tr("Sampling:"), sampling_);
  tabs->addTab(chat, tr("&New chats"));

  auto* look = new QWidget(tabs);
  auto* lf = new QFormLayout(look);
  theme_ = new QComboBox(look);
  theme_->addItem(tr("Follow the system"), QStringLiteral("system"));
  theme_->addItem(tr("Light"), QStringLiteral("light"));
  theme_->addItem(tr("Dark"), QStringLiteral("dark"));
  theme_->setCurrentIndex(qMax(0, theme_->findData(s.theme)));
  lf->addRow(tr("Theme:"), theme_);
  tabs->addTab(look, tr("&Appearance"));

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(tabs);
  layout->addWidget(buttons);
}

AppSettings SettingsDialog::settings() const {
  AppSettings s = base_;
  s.engineMode = remote_->isChecked() ? AppSettings::EngineMode::Remote : AppSettings::EngineMode::Local;
  s.enginePath = enginePath_->text().trimmed();
  s.devices = devices_->text().trimmed();
  s.ctx = ctx_->value();
  s.threads = threads_->value();
  s.draftModel = draftModel_->text().trimmed();
  s.remoteUrl = remoteUrl_->text().trimmed();
  s.remoteKey = remoteKey_->text();
  s.defaultSystemPrompt = systemPrompt_->toPlainText();
  s.defaultSampling = sampling_->sampling();
  s.theme = theme_->currentData().toString();
  return s;
}
