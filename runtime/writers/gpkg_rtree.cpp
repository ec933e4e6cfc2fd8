#include "writers/gpkg_rtree.hpp"

#include <fmt/format.h>
#include <gdal_priv.h>
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>

#include "writers/gdal_write.hpp"

namespace mgpr::runtime::output {
namespace {

// SQLite's R-tree: a node holds at most 51 cells (RTREE_MAXCELLS), each a 64-bit id and
// two float32 bounds for each of the two dimensions, after a 4-byte header (the tree's
// depth, in the root only, and the cell count).
constexpr std::size_t kMaxCells = 51;
constexpr std::size_t kHeaderBytes = 4;
constexpr std::size_t kCellBytes = 8 + 4 * 4;

std::string quoted(const std::string& name) {
  std::string out = "\"";
  for (const char c : name) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// Rounded outwards: the float32 at or below `value`, and at or above it.
float down(double value) {
  auto rounded = static_cast<float>(value);
  if (static_cast<double>(rounded) > value) rounded = std::nextafter(rounded, -std::numeric_limits<float>::infinity());
  return rounded;
}
float up(double value) {
  auto rounded = static_cast<float>(value);
  if (static_cast<double>(rounded) < value) rounded = std::nextafter(rounded, std::numeric_limits<float>::infinity());
  return rounded;
}

void put_be16(std::uint8_t* at, std::uint16_t value) {
  at[0] = static_cast<std::uint8_t>(value >> 8);
  at[1] = static_cast<std::uint8_t>(value & 0xFF);
}
void put_be32(std::uint8_t* at, std::uint32_t value) {
  for (int i = 3; i >= 0; --i) {
    at[i] = static_cast<std::uint8_t>(value & 0xFF);
    value >>= 8;
  }
}
void put_be64(std::uint8_t* at, std::uint64_t value) {
  for (int i = 7; i >= 0; --i) {
    at[i] = static_cast<std::uint8_t>(value & 0xFF);
    value >>= 8;
  }
}
void put_float(std::uint8_t* at, float value) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  put_be32(at, bits);
}

GpkgRtree::Cell bounds_of(std::int64_t id, const std::vector<GpkgRtree::Cell>& cells) {
  GpkgRtree::Cell all{id, cells.front().min_x, cells.front().max_x, cells.front().min_y, cells.front().max_y};
  for (const auto& cell : cells) {
    all.min_x = std::min(all.min_x, cell.min_x);
    all.max_x = std::max(all.max_x, cell.max_x);
    all.min_y = std::min(all.min_y, cell.min_y);
    all.max_y = std::max(all.max_y, cell.max_y);
  }
  return all;
}

}  // namespace

void GpkgRtree::Finalize::operator()(sqlite3_stmt* statement) const { sqlite3_finalize(statement); }

GpkgRtree::Statement GpkgRtree::prepare(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* statement = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &statement, nullptr) != SQLITE_OK) {
    sqlite3_finalize(statement);
    return nullptr;
  }
  return Statement(statement);
}

GpkgRtree::Statement GpkgRtree::prepare_or_fail(const std::string& sql) const {
  auto statement = prepare(db_, sql);
  if (!statement) fail(file_, fmt::format("preparing the spatial index's writes failed: {}", sqlite3_errmsg(db_)));
  return statement;
}

std::unique_ptr<GpkgRtree> GpkgRtree::take_over(GDALDataset& dataset, const std::filesystem::path& file,
                                                const std::string& table, const std::string& column) {
  auto* db = static_cast<sqlite3*>(dataset.GetInternalHandle("SQLITE_HANDLE"));
  if (db == nullptr) return nullptr;
  int defensive = 1;
  if (sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, -1, &defensive) != SQLITE_OK || defensive != 0) return nullptr;
  const auto index = fmt::format("rtree_{}_{}", table, column);
  // Made and empty: the root (node 1) its only node, no feature in it.
  const auto shape =
      prepare(db, fmt::format("SELECT length(data), (SELECT count(*) FROM {0}), (SELECT count(*) FROM {1}) "
                              "FROM {0} WHERE nodeno = 1",
                              quoted(index + "_node"), quoted(index + "_rowid")));
  if (!shape || sqlite3_step(shape.get()) != SQLITE_ROW) return nullptr;
  const int node_bytes = sqlite3_column_int(shape.get(), 0);
  if (sqlite3_column_int64(shape.get(), 1) != 1 || sqlite3_column_int64(shape.get(), 2) != 0) return nullptr;
  if (node_bytes < static_cast<int>(kHeaderBytes + 2 * kCellBytes)) return nullptr;
  // GDAL's triggers that keep the index: remembered, to be made again at the end.
  const auto listed = prepare(db,
                              "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?1 AND "
                              "substr(name, 1, length(?2)) = ?2 ORDER BY name");
  if (!listed) return nullptr;
  const auto prefix = index + "_";
  sqlite3_bind_text(listed.get(), 1, table.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(listed.get(), 2, prefix.c_str(), -1, SQLITE_TRANSIENT);
  std::vector<std::string> names;
  std::vector<std::string> sql;
  while (sqlite3_step(listed.get()) == SQLITE_ROW) {
    names.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(listed.get(), 0)));
    sql.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(listed.get(), 1)));
  }
  if (names.empty()) return nullptr;
  std::unique_ptr<GpkgRtree> rtree(new GpkgRtree(db, file, index, node_bytes, std::move(sql)));
  for (const auto& name : names) {
    if (sqlite3_exec(db, fmt::format("DROP TRIGGER {}", quoted(name)).c_str(), nullptr, nullptr, nullptr) !=
        SQLITE_OK) {
      fail(file, fmt::format("dropping the spatial index's trigger {} failed: {}", name, sqlite3_errmsg(db)));
    }
  }
  return rtree;
}

GpkgRtree::GpkgRtree(sqlite3* db, std::filesystem::path file, std::string index, int node_bytes,
                     std::vector<std::string> trigger_sql)
    : db_(db),
      file_(std::move(file)),
      index_(std::move(index)),
      node_bytes_(node_bytes),
      fanout_(std::min(kMaxCells, (static_cast<std::size_t>(node_bytes) - kHeaderBytes) / kCellBytes)),
      trigger_sql_(std::move(trigger_sql)) {
  insert_node_ =
      prepare_or_fail(fmt::format("INSERT OR REPLACE INTO {}(nodeno, data) VALUES (?1, ?2)", quoted(index_ + "_node")));
  insert_rowid_ =
      prepare_or_fail(fmt::format("INSERT INTO {}(rowid, nodeno) VALUES (?1, ?2)", quoted(index_ + "_rowid")));
  insert_parent_ =
      prepare_or_fail(fmt::format("INSERT INTO {}(nodeno, parentnode) VALUES (?1, ?2)", quoted(index_ + "_parent")));
}

GpkgRtree::~GpkgRtree() = default;

void GpkgRtree::step(sqlite3_stmt* statement, const char* what) {
  const int status = sqlite3_step(statement);
  sqlite3_reset(statement);
  sqlite3_clear_bindings(statement);
  if (status != SQLITE_DONE)
    fail(file_, fmt::format("writing the spatial index's {} failed: {}", what, sqlite3_errmsg(db_)));
}

void GpkgRtree::add(std::int64_t fid, const Envelope& bounds) {
  if (finished_) throw std::logic_error("a feature added to a finished spatial index");
  add_cell(0, Cell{fid, down(bounds.min_x), up(bounds.max_x), down(bounds.min_y), up(bounds.max_y)});
}

void GpkgRtree::add_cell(std::size_t level, const Cell& cell) {
  while (open_.size() <= level) {
    open_.emplace_back().reserve(fanout_);
    numbers_.push_back(next_number_++);
  }
  open_[level].push_back(cell);
  point_at(level, cell.id, numbers_[level]);
  if (open_[level].size() == fanout_) close_node(level);
}

void GpkgRtree::close_node(std::size_t level) {
  const auto number = numbers_[level];
  write_node(number, level, false);
  const auto parent_cell = bounds_of(number, open_[level]);
  open_[level].clear();
  numbers_[level] = next_number_++;
  add_cell(level + 1, parent_cell);  // may grow open_: nothing of it is held across
}

// Where a child lives: a feature's leaf (`_rowid`), or a node's parent (`_parent`).
void GpkgRtree::point_at(std::size_t level, std::int64_t child, std::int64_t node) {
  auto* statement = (level == 0 ? insert_rowid_ : insert_parent_).get();
  sqlite3_bind_int64(statement, 1, child);
  sqlite3_bind_int64(statement, 2, node);
  step(statement, level == 0 ? "leaves" : "parents");
}

void GpkgRtree::write_node(std::int64_t number, std::size_t level, bool root) {
  const auto& cells = open_[level];
  std::vector<std::uint8_t> data(static_cast<std::size_t>(node_bytes_), 0);
  put_be16(data.data(), static_cast<std::uint16_t>(root ? level : 0));
  put_be16(data.data() + 2, static_cast<std::uint16_t>(cells.size()));
  auto* at = data.data() + kHeaderBytes;
  for (const auto& cell : cells) {
    put_be64(at, static_cast<std::uint64_t>(cell.id));
    put_float(at + 8, cell.min_x);
    put_float(at + 12, cell.max_x);
    put_float(at + 16, cell.min_y);
    put_float(at + 20, cell.max_y);
    at += kCellBytes;
  }
  sqlite3_bind_int64(insert_node_.get(), 1, number);
  sqlite3_bind_blob(insert_node_.get(), 2, data.data(), node_bytes_, SQLITE_TRANSIENT);
  step(insert_node_.get(), "nodes");
}

void GpkgRtree::finish() {
  if (finished_) return;
  finished_ = true;
  // From the leaves up: a level below the top closes its open node into its parent
  // (which may fill and close in turn); the top level's node, every cell left, is the
  // root. Its children were told of the number it would have had: they are told of node 1.
  for (std::size_t level = 0; level < open_.size(); ++level) {
    if (level + 1 == open_.size()) {
      write_node(1, level, true);
      const auto table = quoted(index_ + (level == 0 ? "_rowid" : "_parent"));
      const auto repoint =
          prepare_or_fail(level == 0 ? fmt::format("UPDATE {} SET nodeno = 1 WHERE rowid = ?1", table)
                                     : fmt::format("UPDATE {} SET parentnode = 1 WHERE nodeno = ?1", table));
      for (const auto& cell : open_[level]) {
        sqlite3_bind_int64(repoint.get(), 1, cell.id);
        step(repoint.get(), "root");
      }
      break;
    }
    if (!open_[level].empty()) close_node(level);
  }
  for (const auto& sql : trigger_sql_) {
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
      fail(file_, fmt::format("making the spatial index's trigger again failed: {}", sqlite3_errmsg(db_)));
    }
  }
}

}  // namespace mgpr::runtime::output
