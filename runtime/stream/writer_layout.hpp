#pragma once
// Which rank writes which raster's outputs while the tiles run. A run has one writer
// today, on rank 0 (it holds the store, and the run's own files are one per run); what
// streaming keeps per writer (its mail, its count of tiles written, its rows) is keyed
// by the writer's number, so a run with several writers changes this layout and what
// the writers share, not how results reach a writer.
namespace mgpr::runtime {

struct WriterLayout {
  int writers = 1;
  [[nodiscard]] constexpr int writer_of_raster(int image) const { return image % writers; }
  [[nodiscard]] constexpr int rank_of_writer(int writer) const { return writer; }
};

// A run's writers: one, on rank 0. The pacing (writer_pace.hpp) counts a tile's place in
// the run's order, which is its place among its writer's tiles only while there is one.
inline constexpr WriterLayout kRunWriters{};
static_assert(kRunWriters.writers == 1, "several writers need the pacing to count each writer's own tiles");

}  // namespace mgpr::runtime
