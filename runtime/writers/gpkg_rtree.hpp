#pragma once
// A GeoPackage layer's spatial index written as its features come, packed in the order
// they come, instead of by SQLite's R*-tree insertion of each feature.
//
// Why: SQLite's insertion costs about 9 µs a feature (each one reads and rewrites a node
// on every level of the tree), most of what writing a feature to a GeoPackage costs and
// the largest share of a detect run's CPU time after the model's (docs/benchmarks.md);
// building the index at the end instead is serial time after the last tile. Packed here
// it costs one row a feature (its leaf) and one node a leaf's worth of features.
//
// How: GDAL creates the index when the layer is made (the `rtree_<table>_<column>`
// virtual table, its triggers and the gpkg_rtree_index extension row). This drops the
// triggers that would insert each feature and writes the tree into the virtual table's
// own tables, in SQLite's format: `_node` (a node's cells, each an id and its four bounds
// as big-endian int64 and float32, the bounds rounded outwards as SQLite rounds them),
// `_rowid` (a feature's leaf) and `_parent` (a node's parent). Leaves take consecutive
// features, and each level's node is written when it is full, so one open node a level
// is all that is held. At the end the open nodes are closed from the leaves up, the top
// one becomes the root (node 1, holding the tree's depth) and the triggers are made again
// from their own SQL, so that later edits keep the index. A run's features come a row of
// tiles at a time, so consecutive features are neighbours and the leaves stay compact.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

class GDALDataset;
struct sqlite3;
struct sqlite3_stmt;

namespace mgpr::runtime::output {

// A feature's bounds in the layer's coordinates.
struct Envelope {
  double min_x = 0;
  double max_x = 0;
  double min_y = 0;
  double max_y = 0;
};

class GpkgRtree {
 public:
  // Takes over the index of layer `table` (geometry column `column`) of the GeoPackage
  // `dataset` (`file` names it in errors), made and empty. nullptr, the index left to
  // GDAL's triggers, when the GeoPackage is not as expected: no SQLite handle, no index
  // table or not empty, SQLite's defensive mode (which forbids writing the index's own
  // tables), or a node size SQLite would not write.
  static std::unique_ptr<GpkgRtree> take_over(GDALDataset& dataset, const std::filesystem::path& file,
                                              const std::string& table, const std::string& column);
  ~GpkgRtree();
  GpkgRtree(const GpkgRtree&) = delete;
  GpkgRtree& operator=(const GpkgRtree&) = delete;

  // The feature `fid` with its bounds; within the caller's transaction.
  void add(std::int64_t fid, const Envelope& bounds);
  // Closes the open nodes, writes the root and makes the triggers again; within the
  // caller's transaction. Nothing may be added after.
  void finish();

  // One cell of a node: a feature's id (leaves) or a child node's number, and its bounds
  // as float32, each rounded outwards.
  struct Cell {
    std::int64_t id = 0;
    float min_x = 0;
    float max_x = 0;
    float min_y = 0;
    float max_y = 0;
  };

 private:
  GpkgRtree(sqlite3* db, std::filesystem::path file, std::string index, int node_bytes,
            std::vector<std::string> trigger_sql);
  // A prepared statement, finalized when it goes.
  struct Finalize {
    void operator()(sqlite3_stmt* statement) const;
  };
  using Statement = std::unique_ptr<sqlite3_stmt, Finalize>;
  // `sql` prepared on `db`; null when SQLite refuses it.
  static Statement prepare(sqlite3* db, const std::string& sql);
  Statement prepare_or_fail(const std::string& sql) const;

  void add_cell(std::size_t level, const Cell& cell);
  // Writes level's open node, hands its bounds to the level above and opens a new one.
  void close_node(std::size_t level);
  void write_node(std::int64_t number, std::size_t level, bool root);
  void point_at(std::size_t level, std::int64_t child, std::int64_t node);
  void step(sqlite3_stmt* statement, const char* what);

  sqlite3* db_;
  std::filesystem::path file_;
  std::string index_;  // rtree_<table>_<column>
  int node_bytes_;
  std::size_t fanout_;
  std::vector<std::string> trigger_sql_;
  std::vector<std::vector<Cell>> open_;  // the open node of each level, leaves first
  std::vector<std::int64_t> numbers_;    // the number each open node will be written under
  std::int64_t next_number_ = 2;         // node 1 is the root, written last
  Statement insert_node_;
  Statement insert_rowid_;
  Statement insert_parent_;
  bool finished_ = false;
};

}  // namespace mgpr::runtime::output
