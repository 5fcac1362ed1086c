// ui/chat/chat_view.cpp — builds the chat pane and mirrors ChatModel into MessageWidgets.
#include "ui/chat/chat_view.h"

#include <QAbstractSpinBox>
#include <QApplication>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QTimer>
#include <QVBoxLayout>

#include <utility>

#include "ui/chat/chat_controller.h"
#include "ui/chat/message_widget.h"
#include "ui/chat/sampling_bar.h"

ChatView::ChatView(ChatController* controller, QWidget* parent) : QWidget(parent), controller_(controller) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);

  systemPrompt_ = new QLineEdit(this);
  systemPrompt_->setObjectName(QStringLiteral("systemPrompt"));
  systemPrompt_->setPlaceholderText(tr("System prompt for this conversation (optional)"));
  systemPrompt_->setClearButtonEnabled(true);
  layout->addWidget(systemPrompt_);

  scroll_ = new QScrollArea(this);
  scroll_->setWidgetResizable(true);
  scroll_->setFrameShape(QFrame::StyledPanel);
  list_ = new QWidget(scroll_);
  listLayout_ = new QVBoxLayout(list_);
  listLayout_->setContentsMargins(4, 4, 4, 4);
  emptyHint_ = new QLabel(tr("Type a message below and press Enter. Shift+Enter starts a new line."), list_);
  emptyHint_->setAlignment(Qt::AlignCenter);
  emptyHint_->setEnabled(false);
  listLayout_->addWidget(emptyHint_);
  listLayout_->addStretch(1);
  scroll_->setWidget(list_);
  layout->addWidget(scroll_, 1);
  connect(scroll_->verticalScrollBar(), &QScrollBar::valueChanged, this, [this](int v) {
    followTail_ = v >= scroll_->verticalScrollBar()->maximum() - 8;
  });
  connect(scroll_->verticalScrollBar(), &QScrollBar::rangeChanged, this, [this](int, int max) {
    if (followTail_) scroll_->verticalScrollBar()->setValue(max);
  });

  editBanner_ = new QLabel(this);
  editBanner_->hide();
  layout->addWidget(editBanner_);

  auto* inputRow = new QHBoxLayout;
  input_ = new QPlainTextEdit(this);
  input_->setObjectName(QStringLiteral("chatInput"));
  input_->setPlaceholderText(tr("Message…"));
  input_->setMaximumHeight(110);
  input_->setTabChangesFocus(true);
  input_->installEventFilter(this);
  inputRow->addWidget(input_, 1);
  auto* buttons = new QVBoxLayout;
  send_ = new QPushButton(tr("Send ⏎"), this);
  send_->setObjectName(QStringLiteral("sendButton"));
  stop_ = new QPushButton(tr("Stop"), this);
  stop_->setObjectName(QStringLiteral("stopButton"));
  stop_->setToolTip(tr("Stop the reply (Esc)"));
  buttons->addWidget(send_);
  buttons->addWidget(stop_);
  buttons->addStretch(1);
  inputRow->addLayout(buttons);
  layout->addLayout(inputRow);

  sampling_ = new SamplingBar(this);
  layout->addWidget(sampling_);

  connect(send_, &QPushButton::clicked, this, &ChatView::sendInput);
  connect(stop_, &QPushButton::clicked, controller_, &ChatController::stop);
  connect(systemPrompt_, &QLineEdit::editingFinished, this,
          [this] { controller_->setSystemPrompt(systemPrompt_->text()); });
  connect(sampling_, &SamplingBar::samplingEdited, controller_, &ChatController::setSampling);
  connect(controller_, &ChatController::settingsChanged, this, [this] {
    systemPrompt_->setText(controller_->systemPrompt());
    sampling_->setSampling(controller_->sampling());
  });
  connect(controller_, &ChatController::streamingChanged, this, &ChatView::updateButtons);
  connect(controller_, &ChatController::promptProgress, this, [this](int row, int processed, int total) {
    if (MessageWidget* w = widgets_.value(row)) w->setPromptProgress(processed, total);
  });
  connect(controller_, &ChatController::currentConversationChanged, this, [this](qint64 id) {
    cancelEdit();
    if (id == 0) focusInput();  // New chat: type straight away (a chat picked in the list keeps the list's focus)
  });

  ChatModel* model = controller_->chatModel();
  connect(model, &QAbstractItemModel::modelReset, this, &ChatView::rebuild);
  connect(model, &QAbstractItemModel::rowsInserted, this,
          [this](const QModelIndex&, int first, int last) { insertRows(first, last); });
  connect(model, &QAbstractItemModel::rowsRemoved, this,
          [this](const QModelIndex&, int first, int last) { removeRows(first, last); });
  connect(model, &QAbstractItemModel::dataChanged, this,
          [this](const QModelIndex& tl, const QModelIndex& br) { updateRows(tl.row(), br.row()); });

  systemPrompt_->setText(controller_->systemPrompt());
  sampling_->setSampling(controller_->sampling());
  rebuild();
}

MessageWidget* ChatView::makeWidget() {
  auto* w = new MessageWidget(list_);
  connect(w, &MessageWidget::regenerateRequested, controller_, [this] { controller_->regenerate(); });
  connect(w, &MessageWidget::editRequested, this, [this, w] { startEdit(int(widgets_.indexOf(w))); });
  return w;
}

void ChatView::rebuild() {
  qDeleteAll(widgets_);
  widgets_.clear();
  insertRows(0, controller_->chatModel()->rowCount() - 1);
  followTail_ = true;
  updateButtons();
}

void ChatView::insertRows(int first, int last) {
  for (int row = first; row <= last; ++row) {
    MessageWidget* w = makeWidget();
    widgets_.insert(row, w);
    listLayout_->insertWidget(row + 1, w);  // after the hint
  }
  if (last >= first) updateRows(qMax(0, first - 1), int(widgets_.size()) - 1);
  emptyHint_->setVisible(widgets_.isEmpty());
}

void ChatView::removeRows(int first, int last) {
  for (int row = last; row >= first && row < widgets_.size(); --row) delete widgets_.takeAt(row);
  if (!widgets_.isEmpty()) updateRows(int(widgets_.size()) - 1, int(widgets_.size()) - 1);
  emptyHint_->setVisible(widgets_.isEmpty());
}

void ChatView::updateRows(int first, int last) {
  ChatModel* model = controller_->chatModel();
  const int n = model->rowCount();
  for (int row = qMax(0, first); row <= last && row < widgets_.size() && row < n; ++row) {
    widgets_[row]->setMessage(model->message(row), model->streamingRow() == row, row == n - 1);
  }
}

QString ChatView::lastReplyText() const { return widgets_.isEmpty() ? QString() : widgets_.last()->renderedText(); }

void ChatView::updateButtons() {
  const bool streaming = controller_->isStreaming();
  // A reply ended (or was stopped): the next keystroke goes to the message box, not to whatever
  // follows the Stop button in the focus chain (the temperature box) — unless the user is typing
  // in another field of the window.
  if (!streaming && wasStreaming_) {
    QWidget* f = QApplication::focusWidget();
    const bool typingElsewhere = f && f != input_ && window()->isAncestorOf(f) &&
                                 (qobject_cast<QLineEdit*>(f) || qobject_cast<QAbstractSpinBox*>(f) ||
                                  qobject_cast<QPlainTextEdit*>(f));
    if (!typingElsewhere) focusInput();
  }
  wasStreaming_ = streaming;
  stop_->setEnabled(streaming);
  send_->setEnabled(!streaming && sendBlocked_.isEmpty());
  send_->setToolTip(sendBlocked_.isEmpty() ? tr("Send the message (Enter)") : tr("Cannot send: %1").arg(sendBlocked_));
}

void ChatView::setSendBlockedReason(const QString& reason) {
  if (sendBlocked_ == reason) return;
  sendBlocked_ = reason;
  input_->setPlaceholderText(reason.isEmpty() ? tr("Message…") : tr("Message… (cannot send yet: %1)").arg(reason));
  // QPlainTextEdit repaints only when the placeholder appears or goes, not when its text changes:
  // without this the old hint stays on screen until the box is clicked.
  input_->viewport()->update();
  updateButtons();
  if (!queued_.isEmpty()) {
    if (reason.isEmpty() && !controller_->isStreaming()) {
      const QString text = std::exchange(queued_, {});
      editBanner_->hide();
      controller_->setSystemPrompt(systemPrompt_->text());
      if (controller_->send(text)) followTail_ = true;
      else input_->setPlainText(text);  // not sent after all: back in the box
    } else {
      editBanner_->setText(tr("Queued: your message is sent as soon as the engine is ready (%1). Esc takes it back.").arg(reason));
    }
  }
}

void ChatView::sendInput() {
  const QString text = input_->toPlainText();
  if (text.trimmed().isEmpty() || controller_->isStreaming()) return;
  if (!sendBlocked_.isEmpty()) {
    // Not ready yet (the engine is starting): kept, said so, and sent when it is.
    if (editingRow_ >= 0) return;
    queued_ = text;
    input_->clear();
    editBanner_->setText(tr("Queued: your message is sent as soon as the engine is ready (%1). Esc takes it back.").arg(sendBlocked_));
    editBanner_->show();
    return;
  }
  controller_->setSystemPrompt(systemPrompt_->text());
  const bool ok = editingRow_ >= 0 ? controller_->editAndResend(editingRow_, text) : controller_->send(text);
  if (!ok) return;
  input_->clear();
  cancelEdit();
  followTail_ = true;
}

void ChatView::startEdit(int row) {
  if (row < 0 || controller_->isStreaming()) return;
  editingRow_ = row;
  input_->setPlainText(controller_->chatModel()->message(row).content);
  editBanner_->setText(tr("Editing message %1 — Enter resends it and drops what came after; Esc cancels.").arg(row + 1));
  editBanner_->show();
  send_->setText(tr("Resend ⏎"));
  focusInput();
}

void ChatView::cancelEdit() {
  if (editingRow_ < 0) return;
  editingRow_ = -1;
  editBanner_->hide();
  send_->setText(tr("Send ⏎"));
}

void ChatView::focusInput() {
  input_->setFocus();
  input_->moveCursor(QTextCursor::End);
}

bool ChatView::eventFilter(QObject* watched, QEvent* event) {
  if (watched == input_ && event->type() == QEvent::KeyPress) {
    auto* key = static_cast<QKeyEvent*>(event);
    if ((key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) && !(key->modifiers() & Qt::ShiftModifier)) {
      sendInput();
      return true;
    }
    if (key->key() == Qt::Key_Escape) {
      if (controller_->isStreaming()) controller_->stop();
      else if (!queued_.isEmpty()) {
        input_->setPlainText(std::exchange(queued_, {}));
        editBanner_->hide();
      } else if (editingRow_ >= 0) {
        cancelEdit();
        input_->clear();
      }
      return true;
    }
  }
  return QWidget::eventFilter(watched, event);
}
