// ui/chat/message_widget.cpp — Markdown via QTextDocument::setMarkdown, fenced code blocks given a
// shaded background and a fixed-pitch font, the browser sized to its document.
#include "ui/chat/message_widget.h"

#include <QApplication>
#include <QClipboard>
#include <QEvent>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QStyle>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextCursor>
#include <QToolButton>
#include <QVBoxLayout>

#include "ui/chat/chat_model.h"

MessageWidget::MessageWidget(QWidget* parent) : QFrame(parent) {
  setFrameShape(QFrame::NoFrame);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(8, 6, 8, 6);
  layout->setSpacing(2);
  who_ = new QLabel(this);
  QFont bold = who_->font();
  bold.setBold(true);
  who_->setFont(bold);
  layout->addWidget(who_);

  browser_ = new QTextBrowser(this);
  browser_->setObjectName(QStringLiteral("messageText"));
  browser_->setOpenExternalLinks(true);
  browser_->setFrameShape(QFrame::NoFrame);
  browser_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  browser_->setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
  browser_->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
  browser_->viewport()->setAutoFillBackground(false);
  browser_->setStyleSheet(QStringLiteral("QTextBrowser { background: transparent; }"));
  layout->addWidget(browser_);

  auto* footer = new QHBoxLayout;
  footer->setSpacing(4);
  stats_ = new QLabel(this);
  stats_->setObjectName(QStringLiteral("messageStats"));
  stats_->setEnabled(false);  // drawn in the disabled (muted) text colour
  auto makeButton = [this, footer](const QString& text, const QString& tip) {
    auto* b = new QToolButton(this);
    b->setText(text);
    b->setToolTip(tip);
    b->setAutoRaise(true);
    footer->addWidget(b);
    return b;
  };
  regenerate_ = makeButton(QStringLiteral("⟳ ") + tr("regenerate"), tr("Generate this reply again (Ctrl+R)"));
  edit_ = makeButton(QStringLiteral("✎ ") + tr("edit"), tr("Edit this message and send it again"));
  copy_ = makeButton(tr("copy"), tr("Copy the Markdown text"));
  footer->addWidget(stats_);
  footer->addStretch(1);
  layout->addLayout(footer);

  connect(regenerate_, &QToolButton::clicked, this, &MessageWidget::regenerateRequested);
  connect(edit_, &QToolButton::clicked, this, &MessageWidget::editRequested);
  connect(copy_, &QToolButton::clicked, this, [this] { QApplication::clipboard()->setText(message_.content); });

  renderTimer_.setSingleShot(true);
  renderTimer_.setInterval(40);
  connect(&renderTimer_, &QTimer::timeout, this, &MessageWidget::render);
}

void MessageWidget::setMessage(const StoredMessage& m, bool streaming, bool isLast) {
  message_ = m;
  streaming_ = streaming;
  const bool assistant = m.role == QLatin1String("assistant");
  who_->setText(assistant ? tr("Strata") : m.role == QLatin1String("user") ? tr("You") : m.role);
  const QString stats = streaming ? tr("generating…") : ChatModel::statsText(m);
  stats_->setText(stats);
  stats_->setVisible(assistant);
  regenerate_->setVisible(assistant && isLast && !streaming);
  edit_->setVisible(!assistant && !streaming);
  copy_->setVisible(!streaming);
  setProperty("role", m.role);
  if (streaming) {
    if (!renderTimer_.isActive()) renderTimer_.start();
  } else {
    renderTimer_.stop();
    render();
  }
}

QString MessageWidget::renderedText() const { return browser_->document()->toPlainText(); }

void MessageWidget::renderMarkdown(QTextBrowser* browser, const QString& markdown) {
  QTextDocument* doc = browser->document();
  doc->setMarkdown(markdown, QTextDocument::MarkdownDialectGitHub);
  const QColor shade = browser->palette().color(QPalette::AlternateBase);
  const QFont fixed = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  QTextCursor cursor(doc);
  for (QTextBlock b = doc->begin(); b.isValid(); b = b.next()) {
    const QTextBlockFormat bf = b.blockFormat();
    if (!bf.hasProperty(QTextFormat::BlockCodeFence) && !bf.hasProperty(QTextFormat::BlockCodeLanguage)) continue;
    QTextBlockFormat shaded = bf;
    shaded.setBackground(shade);
    cursor.setPosition(b.position());
    cursor.setBlockFormat(shaded);
    cursor.setPosition(b.position() + b.length() - 1, QTextCursor::KeepAnchor);
    QTextCharFormat cf;
    cf.setFont(fixed);
    cursor.mergeCharFormat(cf);
  }
}

void MessageWidget::render() {
  QString text = message_.content;
  if (streaming_) text += QStringLiteral(" ▍");
  if (text != renderedMarkdown_) {
    renderedMarkdown_ = text;
    renderMarkdown(browser_, text);
  }
  fitHeight();
}

void MessageWidget::fitHeight() {
  QTextDocument* doc = browser_->document();
  doc->setTextWidth(browser_->viewport()->width());
  const int h = int(doc->size().height()) + browser_->contentsMargins().top() + browser_->contentsMargins().bottom() + 4;
  if (browser_->height() != h) browser_->setFixedHeight(h);
}

void MessageWidget::resizeEvent(QResizeEvent* e) {
  QFrame::resizeEvent(e);
  fitHeight();
}

void MessageWidget::changeEvent(QEvent* e) {
  QFrame::changeEvent(e);
  if (e->type() == QEvent::PaletteChange) {
    renderedMarkdown_.clear();
    render();
  }
}
