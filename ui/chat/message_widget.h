// ui/chat/message_widget.h — one message in the chat view: who, the Markdown-rendered text (code
// blocks shaded), and under an assistant reply its figures and regenerate / edit / copy buttons.
#pragma once

#include <QFrame>
#include <QTimer>

#include "ui/storage/conversation_store.h"

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
  QString markdown() const { return message_.content; }
  QTextBrowser* browser() const { return browser_; }

  static void renderMarkdown(QTextBrowser* browser, const QString& markdown);

 signals:
  void regenerateRequested();
  void editRequested();

 protected:
  void resizeEvent(QResizeEvent* e) override;
  void changeEvent(QEvent* e) override;

 private:
  void render();
  void fitHeight();

  StoredMessage message_;
  bool streaming_ = false;
  QLabel* who_;
  QTextBrowser* browser_;
  QLabel* stats_;
  QToolButton* regenerate_;
  QToolButton* edit_;
  QToolButton* copy_;
  QTimer renderTimer_;
  QString renderedMarkdown_;
};
