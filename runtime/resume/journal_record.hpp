#pragma once
// What a journal folder records of the run that wrote it, so that a later run can tell
// whether it may take those results over and, when it may not, say why: the resolved
// value of every setting that changes a tile's result, one `name=value` line each, in a
// file beside the rank journals. The folder's name is a fingerprint of that text.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mgpr::runtime {

// One resolved setting: the name of a key of the configuration (or of what the run
// resolved, as libtorch=), and its value as text.
using RecordedSetting = std::pair<std::string, std::string>;

// The record's file in a journal folder. A folder without one was written by an mgpr
// that recorded nothing (a legacy journal, resume/run_journal.hpp).
inline constexpr std::string_view kSettingsRecord = "settings";

// The record's text: the settings in their order, then one `raster=` line per raster.
std::string record_text(const std::vector<RecordedSetting>& settings, const std::vector<std::string>& rasters);

// The settings and rasters of a record's text, lines that are not `name=value` skipped.
struct ParsedRecord {
  std::vector<RecordedSetting> settings;
  std::vector<std::string> rasters;
};
ParsedRecord parse_record(std::string_view text);

// FNV-1a over `text`: stable across builds and machines, unlike std::hash.
std::uint64_t fnv1a(std::string_view text);

// A file's content as "<size> bytes, fnv1a <hash>": the same weights under another path,
// or copied without their modification time, are the same model; a model rewritten in
// place is another. The whole file is read once (a model is read whole to load it
// anyway). None when it cannot be read.
std::optional<std::string> file_content_identity(const std::filesystem::path& file);

// "min_area 100 → 0, precision bf16 → fp32": what differs between an earlier record and
// this run's, in this run's order, then what only the earlier one holds; rasters counted.
// At most `shown` differences, then how many more.
std::string describe_changes(const ParsedRecord& earlier, const ParsedRecord& now, std::size_t shown = 8);

// The journal folders of earlier runs beside `own` (its parent's other folders), newest
// first: each with its record when it has one, and how many tiles its journals hold.
struct EarlierJournal {
  std::filesystem::path folder;
  std::optional<ParsedRecord> record;
  std::size_t tiles = 0;
  std::filesystem::file_time_type written{};  // its newest file's modification time
};
std::vector<EarlierJournal> earlier_journals(const std::filesystem::path& own);

}  // namespace mgpr::runtime
