#include "stream/output_stream.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "mgpr/error.hpp"
#include "mgpr/store_keys.hpp"
#include "mgpr/text.hpp"
#include "stream/writer_pace.hpp"

namespace mgpr::runtime {
namespace {

// The store's topics: the results on their way to the writer (kResultMail), and the
// rasters the other ranks could not read (kFailureMail), each message the raster's
// number (its reason reaches rank 0 with the run's outcome, distributed/run_outcome.hpp).
// How often rank 0's writer looks for rasters the others could not read: rare, and a second late only
// holds back the rows after one (each look is a request per rank: 5,000 a second at 256
// ranks were it every poll).
constexpr auto kFailurePoll = std::chrono::seconds(1);

int decode_failed_raster(const std::string& message) {
  const auto image = parse_number<int>(message, 0, std::numeric_limits<int>::max());
  if (!image) throw std::logic_error("a malformed raster failure on the store");
  return *image;
}

}  // namespace

OutputStream::OutputStream(TaskOutput& output, TileResults earlier, Communicator& communicator, int writer,
                           WriterRecord record)
    : output_(output),
      communicator_(communicator),
      writer_(writer),
      mailbox_(communicator, StoreKey::kResultMail, writer),
      failure_mailbox_(communicator, StoreKey::kFailureMail, writer),
      record_(record),
      dealer_(communicator, output.plan(), record_,
              {[this](const TileId& id) { return received(id); }, [this] { catch_up(); },
               [this](int rank) {
                 mailbox_.stop_reading(rank);
                 failure_mailbox_.stop_reading(rank);
               },
               [this](const Tile& tile) { skip(tile); }}) {
  for (const auto& image : rows_of_tiles(output_.plan())) {
    auto& rows = rows_.emplace_back();
    for (const auto& [row, tiles] : image) rows.push_back({row, tiles, 0});
    // A raster without tiles has one empty row, final from the start: its files are empty.
    if (rows.empty()) rows.push_back({0, 0, 0});
  }
  results_of_.assign(rows_.size(), 0);
  absorb(std::move(earlier));
  thread_ = std::thread([this] { run(); });
}

OutputStream::~OutputStream() {
  if (!thread_.joinable()) return;
  {
    const std::lock_guard lock(mutex_);
    draining_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void OutputStream::take(TileResults batch) {
  {
    const std::lock_guard lock(mutex_);
    incoming_.push_back(std::move(batch));
  }
  wake_.notify_one();
}

void OutputStream::raster_failed(int image, const std::string& /*reason*/) {
  {
    const std::lock_guard lock(mutex_);
    incoming_failures_.push_back(image);
  }
  wake_.notify_one();
}

void OutputStream::run() {
  for (bool last = false; !last;) {
    std::vector<TileResults> batches;
    std::vector<int> failed_rasters;
    bool failed = false;
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, kMailPoll,
                     [this] { return !incoming_.empty() || !incoming_failures_.empty() || draining_; });
      batches.swap(incoming_);
      failed_rasters.swap(incoming_failures_);
      last = draining_;
      failed = failure_ != nullptr;
    }
    try {
      // A run that lost a rank never completes the rows waiting for its tiles: from then
      // on what comes is dropped (below), so rank 0's memory does not grow with it.
      if (!failed) {
        try {
          communicator_.check_peers();
        } catch (const IoError&) {
          dealer_.name_losses();
          throw;
        }
      }
      // After a failure the results are still taken, so no rank waits on a full mailbox,
      // and dropped: nothing more is written.
      if (const auto now = std::chrono::steady_clock::now(); last || now >= next_failure_poll_) {
        next_failure_poll_ = now + kFailurePoll;
        for (const auto& message : failure_mailbox_.receive()) failed_rasters.push_back(decode_failed_raster(message));
      }
      if (!failed) {
        for (const auto image : failed_rasters) mark_failed(image);
      }
      if (const auto now = std::chrono::steady_clock::now(); last || now >= next_mail_poll_) {
        next_mail_poll_ = now + kMailPoll;
        for (auto& message : mailbox_.receive()) {
          TileResults batch;
          decode_results(message, batch);
          if (!failed) absorb(std::move(batch));
        }
      }
      if (failed) continue;
      for (auto& batch : batches) absorb(std::move(batch));
      if (record_.returned != nullptr) dealer_.deal();
      write_final_rows();
      publish_written();
      if (record_.returned != nullptr && next_image_ == rows_.size()) record_.returned->all_written();
    } catch (...) {
      {
        const std::lock_guard lock(mutex_);
        failure_ = std::current_exception();
      }
      // No rank waits any more for rows that will not be written: every tile goes on to
      // be journaled, and the failure is this rank's once the loop ends.
      release_ranks();
      if (record_.returned != nullptr) record_.returned->all_written();
    }
  }
}

void OutputStream::receive_all_mail() {
  for (const auto& message : failure_mailbox_.receive()) mark_failed(decode_failed_raster(message));
  for (auto& message : mailbox_.receive()) {
    TileResults batch;
    decode_results(message, batch);
    absorb(std::move(batch));
  }
}

void OutputStream::catch_up() {
  receive_all_mail();
  std::vector<TileResults> batches;
  {
    const std::lock_guard lock(mutex_);
    batches.swap(incoming_);
  }
  for (auto& batch : batches) absorb(std::move(batch));
}

void OutputStream::skip(const Tile& tile) {
  if (received(tile.id)) return;
  auto& rows = rows_[static_cast<std::size_t>(tile.id.image)];
  const auto row = std::lower_bound(rows.begin(), rows.end(), tile.id.row,
                                    [](const Row& candidate, int wanted) { return candidate.row < wanted; });
  if (row == rows.end() || row->row != tile.id.row) throw std::logic_error("a skipped tile the run does not have");
  ++row->received;
  skipped_.insert(tile.id);
}

std::map<int, std::int64_t> OutputStream::tiles_received(std::span<const std::int64_t> earlier) const {
  std::map<int, std::int64_t> received;
  for (std::size_t image = 0; image < rows_.size(); ++image) {
    auto& count = received[static_cast<int>(image)];
    for (const auto& row : rows_[image]) count += row.received;
    if (image < earlier.size()) count -= earlier[image];
    count -= skipped_of(image);
  }
  return received;
}

void OutputStream::publish_written() {
  if (uncounted_ == 0) return;
  count_written(communicator_, writer_, uncounted_);
  uncounted_ = 0;
}

void OutputStream::release_ranks() {
  try {
    release_ranks_of(communicator_, writer_);
  } catch (const std::exception&) {
    // The store itself is gone: the ranks learn it from their own calls.
  }
}

void OutputStream::drain() {
  {
    const std::lock_guard lock(mutex_);
    draining_ = true;
  }
  wake_.notify_one();
  thread_.join();
  if (failure_) std::rethrow_exception(failure_);
}

bool OutputStream::received(const TileId& id) const {
  return failed_.contains(id.image) || written_already(id) || held_.contains(id) || skipped_.contains(id);
}

std::int64_t OutputStream::skipped_of(std::size_t image) const {
  return std::count_if(skipped_.begin(), skipped_.end(),
                       [image](const TileId& id) { return static_cast<std::size_t>(id.image) == image; });
}

bool OutputStream::written_already(const TileId& id) const {
  const auto image = static_cast<std::size_t>(id.image);
  if (image != next_image_) return image < next_image_;
  const auto& rows = rows_[image];
  return next_row_ > 0 && id.row <= rows[next_row_ - 1].row;
}

void OutputStream::absorb(TileResults batch) {
  for (auto& [id, payload] : batch) {
    const auto image = static_cast<std::size_t>(id.image);
    if (image >= rows_.size()) throw std::logic_error("a result for a raster the run does not have");
    // A failed raster's results are counted (its outcome says how many tiles were done)
    // and dropped, also once it was passed over.
    const bool failed = failed_.contains(id.image);
    if (!failed && (written_already(id) || skipped_.contains(id))) continue;
    auto& rows = rows_[image];
    const auto row = std::lower_bound(rows.begin(), rows.end(), id.row,
                                      [](const Row& candidate, int wanted) { return candidate.row < wanted; });
    if (row == rows.end() || row->row != id.row) throw std::logic_error("a result for a tile the run does not have");
    if (failed || held_.try_emplace(id, std::move(payload)).second) ++row->received;
  }
  const auto held = static_cast<std::int64_t>(held_.size());
  if (held <= held_peak_.load()) return;
  held_peak_.store(held);
  if (record_.held_peak_tiles != nullptr) *record_.held_peak_tiles = held;
}

void OutputStream::mark_failed(int image) {
  if (static_cast<std::size_t>(image) >= rows_.size())
    throw std::logic_error("a failure of a raster the run does not have");
  if (static_cast<std::size_t>(image) < next_image_ || !failed_.insert(image).second) return;
  const auto [first, last] = results_of(held_, image);
  held_.erase(first, last);
}

void OutputStream::write_final_rows() {
  while (next_image_ < rows_.size()) {
    if (failed_.contains(static_cast<int>(next_image_))) {
      abandon_next_raster();
      continue;
    }
    const auto& row = rows_[next_image_][next_row_];
    if (row.received != row.tiles) break;
    write_next_row();
  }
}

void OutputStream::write_next_row() {
  const auto& rows = rows_[next_image_];
  const auto& row = rows[next_row_];
  const RasterRow where{static_cast<int>(next_image_), row.row, next_row_ + 1 == rows.size()};
  const auto [first, last] = results_of_row(held_, where.image, where.row);
  results_of_[next_image_] += output_.write_row(where, first, last, written_);
  held_.erase(first, last);
  uncounted_ += row.tiles;
  if (++next_row_ == rows.size()) {
    ++next_image_;
    next_row_ = 0;
  }
}

void OutputStream::abandon_next_raster() {
  const auto image = static_cast<int>(next_image_);
  const auto [first, last] = results_of(held_, image);
  held_.erase(first, last);
  output_.abandon_raster(image);
  std::int64_t unwritten = 0;
  const auto& rows = rows_[next_image_];
  for (auto row = rows.begin() + static_cast<std::ptrdiff_t>(next_row_); row != rows.end(); ++row) {
    unwritten += row->tiles;
  }
  uncounted_ += unwritten;
  ++next_image_;
  next_row_ = 0;
}

std::vector<std::filesystem::path> OutputStream::finish(const RasterFailures& failed) {
  const auto& plan = output_.plan();
  while (next_image_ < rows_.size()) {
    const auto image = static_cast<int>(next_image_);
    // A raster that failed has only some of its results: what is left of them is not
    // written, nor its own files; rows already written to the run's files stay.
    if ((failed.contains(image) || failed_.contains(image)) && !plan.rasters.empty()) {
      abandon_next_raster();
      continue;
    }
    const auto& row = rows_[next_image_][next_row_];
    if (row.received != row.tiles) throw std::logic_error("outputs finished before every tile was done");
    write_next_row();
  }
  std::vector<RasterOutcome> outcomes(plan.rasters.size());
  for (std::size_t image = 0; image < outcomes.size(); ++image) {
    auto& outcome = outcomes[image];
    for (const auto& row : rows_[image]) {
      outcome.tiles += row.tiles;
      outcome.tiles_done += row.received;
    }
    outcome.tiles_done -= skipped_of(image);
    outcome.results = results_of_[image];
    if (const auto reason = failed.find(static_cast<int>(image)); reason != failed.end()) {
      outcome.failed = true;
      outcome.error = reason->second;
    }
  }
  output_.finish_outputs(outcomes, written_);
  publish_written();
  return std::move(written_);
}

}  // namespace mgpr::runtime
