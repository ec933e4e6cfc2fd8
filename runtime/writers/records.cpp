#include "writers/records.hpp"

#include <fmt/format.h>

namespace mgpr::runtime {

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + '"';
}

std::string table_header(std::span<const VectorField> fields) {
  std::string header;
  for (const auto& field : fields) header += (header.empty() ? "" : ",") + field.name;
  return header + '\n';
}

std::string table_rows(std::span<const VectorField> fields, std::span<const Record> records) {
  std::string rows;
  for (const auto& record : records) {
    for (std::size_t f = 0; f < fields.size(); ++f) {
      if (f > 0) rows += ',';
      const auto& value = record.values.at(f);
      if (const auto* integer = std::get_if<std::int64_t>(&value)) {
        rows += fmt::format("{}", *integer);
      } else if (const auto* real = std::get_if<double>(&value)) {
        rows += fields[f].nine_digits ? fmt::format("{:.9g}", *real) : fmt::format("{}", *real);
      } else {
        rows += csv_field(std::get<std::string>(value));
      }
    }
    rows += '\n';
  }
  return rows;
}

}  // namespace mgpr::runtime
