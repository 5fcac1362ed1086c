// engine/plan/text_table.h — column-aligned plain-text tables for what `plan` prints (the memory
// table, the parts table). Each cell is padded to its column's widest cell: the first column
// left-aligned (names), the middle ones as asked, the last left-aligned and never padded, so it
// may hold multi-byte UTF-8 (✓) whose byte count is not its width. Columns are two spaces apart.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace strata::plan {

enum class Align { Left, Right };

inline std::string format_table(const std::vector<std::string>& header,
                                const std::vector<std::vector<std::string>>& rows, Align middle) {
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& r : rows) width[c] = std::max(width[c], c < r.size() ? r[c].size() : 0);
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (size_t c = 0; c < cells.size(); ++c) {
      const bool last = c + 1 == cells.size();
      const std::string pad(last ? 0 : width[c] - cells[c].size(), ' ');
      if (c > 0) s += "  ";
      s += c > 0 && !last && middle == Align::Right ? pad + cells[c] : cells[c] + pad;
    }
    return s + "\n";
  };
  std::string out = line(header);
  for (const auto& r : rows) out += line(r);
  return out;
}

}  // namespace strata::plan
