#include "pipeline/batch_slots.hpp"

#include <chrono>
#include <cstring>
#include <stdexcept>

#include "pipeline/raw_scaler.hpp"

namespace mgpr::runtime {
namespace {

BatchShape shape_of(const TileData& tile, int batch_size) {
  return {batch_size, tile.channels, tile.height, tile.width,
          tile.bytes.empty() ? torch::kFloat : raw_dtype(tile.raw_sample)};
}

// Copies `tile`'s samples into row `row` of a slot's host input, and a raw tile's valid
// mask into the slot's masks (all ones when the tile has none).
void copy_into_row(const TileData& tile, const torch::Tensor& input, const torch::Tensor& valid,
                   const BatchShape& shape, std::int64_t row) {
  const auto samples = shape.tile_elements();
  if (shape.dtype != torch::kFloat) {
    auto* const rows = static_cast<std::uint8_t*>(input.data_ptr());
    std::memcpy(rows + row * static_cast<std::int64_t>(tile.bytes.size()), tile.bytes.data(), tile.bytes.size());
    const auto plane = shape.height * shape.width;
    auto* mask = valid.data_ptr<std::uint8_t>() + row * plane;
    if (tile.valid.empty()) {
      std::memset(mask, 1, static_cast<std::size_t>(plane));
    } else {
      std::memcpy(mask, tile.valid.data(), tile.valid.size());
    }
  } else {
    std::memcpy(input.data_ptr<float>() + row * samples, tile.pixels.data(), tile.pixels.size() * sizeof(float));
  }
}

}  // namespace

BatchSlots::BatchSlots(BatchDevice& device, int batch_size)
    : device_(device), batch_size_(batch_size), slots_(static_cast<std::size_t>(device.slots())) {
  if (batch_size < 1) throw std::invalid_argument("batch_size must be at least 1");
  for (int slot = 0; slot < device.slots(); ++slot) free_.push_back(slot);
}

bool BatchSlots::room_in_filling() const {
  return !filling_.empty() && slots_[static_cast<std::size_t>(filling_.back())].rows_placed < batch_size_;
}

// Under the lock. The device's host input is asked for at every opening, as a slot is
// only opened once the device is done with it (the simulated device checks that).
void BatchSlots::open_free_slot() {
  const int index = free_.front();
  free_.pop_front();
  auto& slot = slots_[static_cast<std::size_t>(index)];
  slot.input = device_.host_input(index, *shape_);
  if (shape_->dtype != torch::kFloat) slot.valid = device_.host_valid(index, *shape_);
  slot.rows_placed = 0;
  slot.rows_arrived = 0;
  slot.any_invalid = false;
  slot.tiles.assign(static_cast<std::size_t>(batch_size_), TileData{});
  filling_.push_back(index);
}

void BatchSlots::place(TileData& tile) {
  const auto shape = shape_of(tile, batch_size_);
  const auto samples = static_cast<std::int64_t>(
      shape.dtype == torch::kFloat ? tile.pixels.size() : tile.bytes.size() / raw_sample_size(tile.raw_sample));
  if (samples != shape.tile_elements()) throw std::logic_error("a tile whose samples do not fill its shape");
  int index = 0;
  int row = 0;
  torch::Tensor input;
  torch::Tensor valid;
  {
    std::unique_lock lock(mutex_);
    if (!shape_) shape_ = shape;
    if (shape != *shape_) throw std::logic_error("a tile of another shape than the batch's");
    changed_.wait(lock, [&] { return error_ || stopped_ || room_in_filling() || !free_.empty(); });
    if (error_ || stopped_) throw std::runtime_error("the run stopped before this tile reached a batch");
    if (!room_in_filling()) open_free_slot();
    index = filling_.back();
    auto& slot = slots_[static_cast<std::size_t>(index)];
    row = slot.rows_placed++;
    input = slot.input;
    valid = slot.valid;
  }
  // Outside the lock: the readers copy into their rows at once.
  const auto copying = std::chrono::steady_clock::now();
  copy_into_row(tile, input, valid, shape, row);
  const double copy_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - copying).count();
  tile.placed = TileData::Placement{index, row};
  const std::lock_guard lock(mutex_);
  stats_.stack_s += copy_s;
}

void BatchSlots::stop_waiting() {
  {
    const std::lock_guard lock(mutex_);
    stopped_ = true;
  }
  changed_.notify_all();
}

void BatchSlots::arrived(TileData&& tile) {
  if (!tile.placed) throw std::logic_error("a tile the readers did not place into a batch slot");
  const std::lock_guard lock(mutex_);
  auto& slot = slots_.at(static_cast<std::size_t>(tile.placed->slot));
  const auto row = static_cast<std::size_t>(tile.placed->row);
  if (row >= slot.tiles.size()) throw std::logic_error("a tile placed past its batch slot's rows");
  // Float tiles have their missing pixels zeroed on the readers; only raw ones need masks.
  slot.any_invalid = slot.any_invalid || (slot.valid.defined() && !tile.valid.empty());
  slot.tiles[row] = std::move(tile);
  ++slot.rows_arrived;
}

std::optional<int> BatchSlots::take_full(bool at_end) {
  const std::lock_guard lock(mutex_);
  if (error_ || filling_.empty()) return std::nullopt;
  const int index = filling_.front();
  auto& slot = slots_[static_cast<std::size_t>(index)];
  const bool full = slot.rows_arrived == batch_size_;
  const bool last = at_end && slot.rows_arrived > 0 && slot.rows_arrived == slot.rows_placed;
  if (!full && !last) return std::nullopt;
  filling_.pop_front();
  slot.tiles.resize(static_cast<std::size_t>(slot.rows_arrived));
  return index;
}

BatchInput BatchSlots::input(int slot) const {
  const std::lock_guard lock(mutex_);
  const auto& taken = slots_.at(static_cast<std::size_t>(slot));
  const auto rows = static_cast<std::int64_t>(taken.tiles.size());
  return {taken.input.slice(0, 0, rows), taken.any_invalid ? taken.valid.slice(0, 0, rows) : torch::Tensor()};
}

bool BatchSlots::any_invalid(int slot) const {
  const std::lock_guard lock(mutex_);
  return slots_.at(static_cast<std::size_t>(slot)).any_invalid;
}

void BatchSlots::submitted(int slot) {
  {
    const std::lock_guard lock(mutex_);
    submitted_.push_back(slot);
  }
  changed_.notify_all();
}

void BatchSlots::close() {
  {
    const std::lock_guard lock(mutex_);
    closed_ = true;
  }
  changed_.notify_all();
}

std::optional<int> BatchSlots::next_submitted() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return closed_ || !submitted_.empty(); });
  if (submitted_.empty()) return std::nullopt;
  const int slot = submitted_.front();
  submitted_.pop_front();
  return slot;
}

void BatchSlots::give_back(int slot) {
  {
    const std::lock_guard lock(mutex_);
    slots_.at(static_cast<std::size_t>(slot)).tiles.clear();
    free_.push_back(slot);
  }
  changed_.notify_all();
}

void BatchSlots::fail(std::exception_ptr error) {
  {
    const std::lock_guard lock(mutex_);
    if (!error_) error_ = std::move(error);
  }
  changed_.notify_all();
}

bool BatchSlots::has_failed() const {
  const std::lock_guard lock(mutex_);
  return error_ != nullptr;
}

std::exception_ptr BatchSlots::error() const {
  const std::lock_guard lock(mutex_);
  return error_;
}

}  // namespace mgpr::runtime
