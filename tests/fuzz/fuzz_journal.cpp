// The resume journal a rerun trusts (requeued jobs read it): any bytes, as a crash or a
// user may leave them. Every line it accepts must write back to itself. The same bytes as
// the settings record beside it: a record written from what was read reads back to it.
#include "fuzz_input.hpp"
#include "resume/journal_record.hpp"
#include "resume/tile_journal.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = mgpr::fuzz::as_text(data, size);
  mgpr::fuzz::refusing_is_fine([&] {
    mgpr::runtime::TileResults results;
    mgpr::runtime::parse_result_lines(text, results);
    std::string written;
    for (const auto& [id, payload] : results) written += mgpr::runtime::format_result_line(id, payload);
    mgpr::runtime::TileResults again;
    mgpr::runtime::parse_result_lines(written, again);
    if (again != results) __builtin_trap();
  });
  const auto record = mgpr::runtime::parse_record(text);
  const auto written = mgpr::runtime::record_text(record.settings, record.rasters);
  const auto again = mgpr::runtime::parse_record(written);
  if (mgpr::runtime::record_text(again.settings, again.rasters) != written) __builtin_trap();
  static_cast<void>(mgpr::runtime::describe_changes(record, again));
  return 0;
}
