// ui/chat/chat_view.h — the chat pane: system prompt, the messages (one MessageWidget per row of
// ChatModel, kept in step with the model's signals), the message box (Enter sends, Shift+Enter is
// a new line) with Send / Stop, and the sampling bar. Calls ChatController; never the engine.
#pragma once

#include <QList>
#include <QWidget>

class ChatController;
class MessageWidget;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QScrollArea;
class QVBoxLayout;
class SamplingBar;

class ChatView : public QWidget {
  Q_OBJECT
 public:
  explicit ChatView(ChatController* controller, QWidget* parent = nullptr);

  QPlainTextEdit* input() const { return input_; }
  QLineEdit* systemPromptEdit() const { return systemPrompt_; }
  SamplingBar* samplingBar() const { return sampling_; }
  int messageCount() const { return int(widgets_.size()); }
  MessageWidget* messageWidget(int row) const { return widgets_.value(row); }
  QString lastReplyText() const;  // rendered text of the last message
  QPushButton* sendButton() const { return send_; }
  QPushButton* stopButton() const { return stop_; }
  QString sendBlockedReason() const { return sendBlocked_; }
  QLabel* banner() const { return editBanner_; }      // editing, or a message queued until ready
  QString queuedText() const { return queued_; }     // sent as soon as sending is allowed

 public slots:
  void sendInput();       // Enter: send, or resend when editing
  void startEdit(int row);
  void cancelEdit();
  void focusInput();
  // Non-empty: Send is disabled (Enter does nothing) and says why, e.g. no model is loaded.
  void setSendBlockedReason(const QString& reason);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void rebuild();
  void insertRows(int first, int last);
  void removeRows(int first, int last);
  void updateRows(int first, int last);
  void updateButtons();
  void scrollToEndSoon();
  MessageWidget* makeWidget();

  ChatController* controller_;
  QLineEdit* systemPrompt_;
  QScrollArea* scroll_;
  QWidget* list_;
  QVBoxLayout* listLayout_;
  QList<MessageWidget*> widgets_;
  QLabel* emptyHint_;
  QLabel* editBanner_;
  QPlainTextEdit* input_;
  QPushButton* send_;
  QPushButton* stop_;
  SamplingBar* sampling_;
  QString sendBlocked_;
  QString queued_;  // Enter pressed while sending was blocked: sent when it no longer is
  bool wasStreaming_ = false;
  int editingRow_ = -1;
  bool followTail_ = true;
};
