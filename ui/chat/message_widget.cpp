// ui/chat/message_widget.cpp — Markdown via QTextDocument::setMarkdown, fenced code blocks given a
// shaded background and a fixed-pitch font, the browser sized to its document.
#include "ui/chat/message_widget.h"

#include <QApplication>
#include <QClipboard>
#include <QDesktopServices>
#include <QUrl>
#include <QEvent>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QStyle>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTimer>
#include <QTextCursor>
#include <QToolButton>
#include <QVBoxLayout>

#include "ui/chat/chat_model.h"
#include "ui/chat/code_highlighter.h"

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
  browser_->setOpenLinks(false);  // links: the copy links of code blocks, else the desktop's browser
  highlighter_ = new CodeHighlighter(browser_->document());
  connect(browser_, &QTextBrowser::anchorClicked, this, [this](const QUrl& url) {
    if (url.scheme() == QLatin1String("strata-copy")) {
      const int n = url.path().toInt();
      const QStringList blocks = fencedCodeBlocks(message_.content);
      if (n >= 0 && n < blocks.size()) {
        QApplication::clipboard()->setText(blocks[n]);
        // Feedback where the click was: the link reads "copied" for two seconds.
        copiedBlock_ = n;
        render();
        QTimer::singleShot(2000, this, [this, n] {
          if (copiedBlock_ != n) return;
          copiedBlock_ = -1;
          render();
        });
        emit codeCopied(n);
      }
      return;
    }
    QDesktopServices::openUrl(url);
  });
  browser_->setFrameShape(QFrame::NoFrame);
  browser_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  // Text and code wrap at the column's width, inside words if need be: never a scrollbar that
  // would cover the last line (the browser is sized to its document).
  browser_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  browser_->setLineWrapMode(QTextEdit::WidgetWidth);
  browser_->setWordWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
  browser_->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
  browser_->viewport()->setAutoFillBackground(false);
  syncBrowserPalette();  // no style sheet: it would keep the colours of the palette it was made with
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
  footer->addStretch(1);
  layout->addLayout(footer);
  // The figures on a line of their own, wrapped: an error's long text never widens the message column.
  stats_->setWordWrap(true);
  stats_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(stats_);
  note_ = new QLabel(this);
  note_->setObjectName(QStringLiteral("messageNote"));
  note_->setWordWrap(true);
  note_->setEnabled(false);  // muted, like the stats
  note_->setVisible(false);
  layout->addWidget(note_);

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
  isLast_ = isLast;
  const bool assistant = m.role == QLatin1String("assistant");
  who_->setText(assistant ? tr("Strata") : m.role == QLatin1String("user") ? tr("You") : m.role);
  if (!streaming) promptDone_ = -1;
  QString stats = streaming ? tr("generating…") : ChatModel::statsText(m);
  if (streaming && m.content.isEmpty() && promptDone_ >= 0 && promptDone_ < promptTotal_)
    stats = tr("reading the prompt: %1 / %2 tokens (%3%)")
                .arg(promptDone_)
                .arg(promptTotal_)
                .arg(100 * qint64(promptDone_) / qMax(1, promptTotal_));
  statsPlain_ = stats;
  stats_->setText(breakableText(stats));
  stats_->setVisible(assistant);
  note_->setText(m.note.isEmpty() ? QString() : QStringLiteral("⚠ ") + breakableText(m.note));
  note_->setVisible(!m.note.isEmpty());
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

void MessageWidget::setPromptProgress(int processed, int total) {
  promptDone_ = processed;
  promptTotal_ = total;
  setMessage(message_, streaming_, isLast_);
}

QString MessageWidget::statsText() const { return statsPlain_; }

QString MessageWidget::breakableText(const QString& text) {
  // A word-wrapped QLabel breaks only between words, so a run longer than kRun characters (a
  // path, a hash, JSON) gets a zero-width space after every character of it: the label may then
  // break it anywhere, and it looks the same.
  constexpr int kRun = 24;
  QString out;
  out.reserve(text.size());
  int runStart = 0;
  auto flush = [&](int end) {
    if (end - runStart <= kRun) {
      out += QStringView(text).mid(runStart, end - runStart);
      return;
    }
    for (int i = runStart; i < end; ++i) {
      out += text[i];
      if (i + 1 < end && !text[i].isHighSurrogate()) out += QChar(0x200B);
    }
  };
  for (int i = 0; i < text.size(); ++i) {
    if (text[i].isSpace()) {
      flush(i);
      out += text[i];
      runStart = i + 1;
    }
  }
  flush(int(text.size()));
  return out;
}

QString MessageWidget::noteText() const { return note_->isVisibleTo(this) ? message_.note : QString(); }

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
    shaded.setNonBreakableLines(false);  // a long code line wraps rather than widening the text
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
  if (!streaming_) text = withCopyLinks(text, copiedBlock_);  // a "copy code" link under each finished code block
  if (text != renderedMarkdown_) {
    renderedMarkdown_ = text;
    highlighter_->setBackground(browser_->palette().color(QPalette::AlternateBase));
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

void MessageWidget::syncBrowserPalette() {
  // The text in this widget's palette (it follows the application's), on a transparent base.
  QPalette p = palette();
  for (auto group : {QPalette::Active, QPalette::Inactive, QPalette::Disabled}) {
    p.setColor(group, QPalette::Base, Qt::transparent);
    p.setColor(group, QPalette::Text, palette().color(group, QPalette::WindowText));
  }
  browser_->setPalette(p);
}

void MessageWidget::resizeEvent(QResizeEvent* e) {
  QFrame::resizeEvent(e);
  fitHeight();
}

void MessageWidget::changeEvent(QEvent* e) {
  QFrame::changeEvent(e);
  if (e->type() == QEvent::PaletteChange) {
    syncBrowserPalette();
    renderedMarkdown_.clear();
    render();
  }
}
