// ui/chat/code_highlighter.cpp — a small language-agnostic highlighter for code blocks, and the
// fenced-block scanner behind the copy links.
#include "ui/chat/code_highlighter.h"

#include <QRegularExpression>
#include <QTextBlock>
#include <QTextBlockFormat>
#include <QTextDocument>

#include "ui/theme/contrast.h"

namespace {
const QRegularExpression& keywords() {
  static const QRegularExpression re(QStringLiteral(
      "\\b(def|class|return|if|elif|else|for|while|in|import|from|as|with|try|except|finally|raise|lambda|yield|"
      "pass|break|continue|and|or|not|is|None|True|False|self|fn|let|mut|pub|impl|struct|enum|trait|use|mod|match|"
      "const|static|void|int|char|bool|float|double|auto|unsigned|long|short|namespace|template|typename|public|"
      "private|protected|virtual|override|new|delete|nullptr|true|false|function|var|this|async|await|export|"
      "package|func|go|defer|select|case|switch|default|do|goto|typedef|sizeof|include|echo|then|fi|done|esac)\\b"));
  return re;
}
bool isCode(const QTextBlock& b) {
  const QTextBlockFormat f = b.blockFormat();
  return f.hasProperty(QTextFormat::BlockCodeFence) || f.hasProperty(QTextFormat::BlockCodeLanguage);
}
}  // namespace

CodeHighlighter::CodeHighlighter(QTextDocument* document) : QSyntaxHighlighter(document) {}

void CodeHighlighter::setBackground(const QColor& background) { background_ = background; }

QColor CodeHighlighter::colour(Token t) const {
  using strata::ui::readableOn;
  switch (t) {
    case Token::Keyword: return readableOn(QColor(0x1f, 0x4f, 0xd0), background_);  // blue
    case Token::String: return readableOn(QColor(0x1a, 0x7f, 0x37), background_);   // green
    case Token::Comment: return readableOn(QColor(0x80, 0x80, 0x80), background_);  // grey
    case Token::Number: return readableOn(QColor(0xa0, 0x50, 0x00), background_);   // brown
  }
  return {};
}

void CodeHighlighter::highlightBlock(const QString& text) {
  if (!isCode(currentBlock())) return;
  QTextCharFormat kw, str, com, num;
  kw.setForeground(colour(Token::Keyword));
  kw.setFontWeight(QFont::DemiBold);
  str.setForeground(colour(Token::String));
  com.setForeground(colour(Token::Comment));
  com.setFontItalic(true);
  num.setForeground(colour(Token::Number));
  static const QRegularExpression numbers(QStringLiteral("\\b\\d+(\\.\\d+)?\\b"));
  for (auto it = keywords().globalMatch(text); it.hasNext();) {
    const auto m = it.next();
    setFormat(int(m.capturedStart()), int(m.capturedLength()), kw);
  }
  for (auto it = numbers.globalMatch(text); it.hasNext();) {
    const auto m = it.next();
    setFormat(int(m.capturedStart()), int(m.capturedLength()), num);
  }
  // Strings, then comments (a '#' or '//' outside a string starts one to the end of the line).
  int i = 0;
  const int n = int(text.size());
  while (i < n) {
    const QChar c = text[i];
    if (c == QLatin1Char('"') || c == QLatin1Char('\'') || c == QLatin1Char('`')) {
      int j = i + 1;
      while (j < n && text[j] != c) j += text[j] == QLatin1Char('\\') ? 2 : 1;
      const int end = qMin(j + 1, n);
      setFormat(i, end - i, str);
      i = end;
      continue;
    }
    if (c == QLatin1Char('#') || (c == QLatin1Char('/') && i + 1 < n && text[i + 1] == QLatin1Char('/'))) {
      setFormat(i, n - i, com);
      break;
    }
    ++i;
  }
}

QStringList fencedCodeBlocks(const QString& markdown) {
  QStringList out;
  QString fence, body;
  bool inside = false;
  for (const QString& line : markdown.split(QLatin1Char('\n'))) {
    const QString t = line.trimmed();
    if (!inside && (t.startsWith(QLatin1String("```")) || t.startsWith(QLatin1String("~~~")))) {
      inside = true;
      fence = t.left(3);
      body.clear();
    } else if (inside && t.startsWith(fence) && t.mid(3).trimmed().isEmpty()) {
      inside = false;
      if (body.endsWith(QLatin1Char('\n'))) body.chop(1);
      out << body;
    } else if (inside) {
      body += line + QLatin1Char('\n');
    }
  }
  return out;
}

QString withCopyLinks(const QString& markdown, int copied) {
  QStringList lines = markdown.split(QLatin1Char('\n'));
  QStringList out;
  QString fence;
  bool inside = false;
  int n = 0;
  for (const QString& line : lines) {
    out << line;
    const QString t = line.trimmed();
    if (!inside && (t.startsWith(QLatin1String("```")) || t.startsWith(QLatin1String("~~~")))) {
      inside = true;
      fence = t.left(3);
    } else if (inside && t.startsWith(fence) && t.mid(3).trimmed().isEmpty()) {
      inside = false;
      // Plain words: a symbol such as ⧉ is a missing-glyph box in most fonts.
      const QString label = n == copied ? QStringLiteral("copied") : QStringLiteral("copy code");
      out << QString() << QStringLiteral("[%1](strata-copy:%2)").arg(label).arg(n) << QString();
      ++n;
    }
  }
  return out.join(QLatin1Char('\n'));
}
