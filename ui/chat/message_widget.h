// ui/chat/message_widget.h — one message in the chat view: who, the Markdown-rendered text (code
// blocks shaded, syntax-highlighted, each with a "copy code" link), and under an assistant reply its
// figures and regenerate / edit / copy buttons.
#pragma once

#include <QFrame>
#include <QTimer>

#include "ui/storage/conversation_store.h"

class CodeHighlighter;
class QLabel;
class QTextBrowser;
class QToolButton;

class MessageWidget : public QFrame {
  Q_OBJECT
 public:
  explicit MessageWidget(QWidget* parent = nullptr);

  // Shows `m`; while `streaming`, re-rendering is coalesced (at most every 40 ms).
  void setMessage(const StoredMessage& m, bool streaming, bool isLast);
  QString renderedText() const;  // the document as plain text (what the user sees)
  // While streaming and before the first text: "reading the prompt: 512 / 4096 tokens (12%)".
  void setPromptProgress(int processed, int total);
  QString statsText() const;
  QString noteText() const;  // "" when the message has no note (the label is hidden)
  QString markdown() const { return message_.content; }
  QTextBrowser* browser() const { return browser_; }

  static void renderMarkdown(QTextBrowser* browser, const QString& markdown);
  // `text` with a zero-width space between the characters of each run of more than 24 non-space
  // characters, so that a word-wrapped label can break it (it never widens its column).
  static QString breakableText(const QString& text);

 signals:
  void regenerateRequested();
  void editRequested();
  void codeCopied(int block);  // the "copy code" link of the block-th code block was clicked

 protected:
  void resizeEvent(QResizeEvent* e) override;
  void changeEvent(QEvent* e) override;

 private:
  void render();
  void fitHeight();
  void syncBrowserPalette();

  StoredMessage message_;
  bool streaming_ = false;
  QLabel* who_;
  QTextBrowser* browser_;
  QLabel* stats_;
  QLabel* note_;  // under the footer: what the engine went through while this reply streamed
  QToolButton* regenerate_;
  QToolButton* edit_;
  QToolButton* copy_;
  QTimer renderTimer_;
  QString renderedMarkdown_;
  QString statsPlain_;  // the stats line as set (the label's text has break points added)
  int promptDone_ = -1, promptTotal_ = 0;
  int copiedBlock_ = -1;  // the code block whose copy link was just clicked (reads "copied")
  bool isLast_ = false;
  CodeHighlighter* highlighter_ = nullptr;
};
