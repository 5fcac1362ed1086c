// ui/chat/code_highlighter.h — syntax highlighting of the fenced code blocks in a rendered message
// (keywords of the common languages, strings, comments, numbers), in colours that read on the
// palette in use; and the fenced blocks of a Markdown text, for their copy links.
#pragma once

#include <QColor>
#include <QStringList>
#include <QSyntaxHighlighter>

class CodeHighlighter : public QSyntaxHighlighter {
  Q_OBJECT
 public:
  explicit CodeHighlighter(QTextDocument* document);
  // Colours for a background (re-run rehighlight() after a palette change).
  void setBackground(const QColor& background);

  enum class Token { Keyword, String, Comment, Number };
  QColor colour(Token t) const;

 protected:
  void highlightBlock(const QString& text) override;

 private:
  QColor background_ = Qt::white;
};

// The contents of every closed fenced code block (``` or ~~~) of `markdown`, in order.
QStringList fencedCodeBlocks(const QString& markdown);
// `markdown` with a "⧉ copy code" link (strata-copy:N) after the N-th closed fenced block.
QString withCopyLinks(const QString& markdown, int copied = -1);  // block `copied` reads "copied"
