// A plain-text table with aligned columns, for terminal output that also reads well in logs.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace kernelarc {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> headers);
  void add_row(std::vector<std::string> cells);
  /// Columns padded to their widest cell; numbers right-aligned, text left-aligned.
  void print(std::ostream& out) const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace kernelarc
