#pragma once
// The pipeline's batch slots and who holds each (pipeline/pipeline.hpp): free; being
// filled, the reader threads copying the tiles they read straight into its rows; full
// and submitted to the device; collected and consumed by the post-processing thread,
// then free again. One lock serves the reader threads, the filling thread and the
// post-processing thread, so every hand-over of a slot is ordered.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <vector>

#include "pipeline/batch_device.hpp"
#include "pipeline/pipeline.hpp"
#include "source/reader_pool.hpp"

namespace mgpr::runtime {

class BatchSlots final : public TilePlacer {
 public:
  BatchSlots(BatchDevice& device, int batch_size);

  // On a reader thread: the next free row of the slot being filled (a free slot is
  // opened when there is none, waiting for one while every slot is busy), then the
  // tile's samples copied into that row of its host input, its valid mask into the
  // slot's masks. Throws std::logic_error for a tile of another shape than the first,
  // and an error once the run failed or the pool stops, so the reader stops.
  void place(TileData& tile) override;
  void stop_waiting() override;

  // On the filling thread, for each placed tile next() hands out: records it (its id and
  // mask, without pixels) with its slot's row.
  void arrived(TileData&& tile);
  // The oldest slot being filled once every one of its rows has arrived, taken out of the
  // filling; at the end of the feed (`at_end`), also one with fewer rows. None while the
  // oldest is not full, and none once a stage failed.
  std::optional<int> take_full(bool at_end);
  // A taken slot's tiles, in row order; the filling thread reads them before submitting,
  // the post-processing thread after collecting.
  std::vector<TileData>& tiles(int slot) { return slots_.at(static_cast<std::size_t>(slot)).tiles; }
  // A taken slot's host input, its rows the slot's tiles, with their valid masks when a
  // raw tile has a missing pixel; unchanged until the slot is given back.
  [[nodiscard]] BatchInput input(int slot) const;
  // Whether a tile of the taken slot has pixels to clear: its valid masks travel then.
  [[nodiscard]] bool any_invalid(int slot) const;

  void submitted(int slot);
  void close();  // no more slots will be submitted
  // On the post-processing thread: the oldest submitted slot, or none once closed and
  // drained; give_back() frees it for the readers after its output was collected.
  std::optional<int> next_submitted();
  void give_back(int slot);

  // Keeps the first error; readers waiting for a slot stop, the filling thread at its
  // next slot.
  void fail(std::exception_ptr error);
  [[nodiscard]] bool has_failed() const;
  [[nodiscard]] std::exception_ptr error() const;

  // The running figures, changed under the lock by any thread.
  template <typename Change>
  PipelineStats update(Change change) {
    const std::lock_guard lock(mutex_);
    change(stats_);
    return stats_;
  }

 private:
  struct Slot {
    torch::Tensor input;  // the device's host input and, for raw tiles, valid masks
    torch::Tensor valid;
    int rows_placed = 0;   // rows handed to reader threads
    int rows_arrived = 0;  // rows copied and recorded by the filling thread
    bool any_invalid = false;
    std::vector<TileData> tiles;  // by row
  };

  [[nodiscard]] bool room_in_filling() const;
  void open_free_slot();

  BatchDevice& device_;
  const int batch_size_;
  std::optional<BatchShape> shape_;  // from the first tile placed

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Slot> slots_;
  std::deque<int> free_;
  std::deque<int> filling_;  // opened for the readers, oldest first; only the newest has rows left
  std::deque<int> submitted_;
  bool closed_ = false;
  bool stopped_ = false;  // the reader pool is stopping
  std::exception_ptr error_;
  PipelineStats stats_;
};

}  // namespace mgpr::runtime
