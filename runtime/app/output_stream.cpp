#include "app/output_stream.hpp"

#include <chrono>
#include <utility>

namespace mgpr::runtime {
namespace {

// The store's topic of the results on their way to rank 0.
constexpr const char* kResultTopic = "mgpr/results";
// Batches a rank may have on the store unread before it waits for rank 0's writer: a
// writer slower than the ranks slows them rather than growing rank 0's memory.
constexpr std::int64_t kUnreadBatches = 64;
// How often rank 0's writer looks for the other ranks' results when its own are idle.
constexpr auto kMailPoll = std::chrono::milliseconds(50);

}  // namespace

ResultMail::ResultMail(Communicator& communicator) : mail_(communicator, kResultTopic, kUnreadBatches) {}

void ResultMail::take(TileResults batch) { mail_.send(encode_results(batch)); }

OutputStream::OutputStream(TaskOutput& output, TileResults earlier, Communicator& communicator)
    : output_(output), mailbox_(communicator, kResultTopic) {
  const auto& plan = output_.plan();
  // Fake data has no raster: its tiles are image 0's.
  const auto images = plan.rasters.empty() ? std::size_t{1} : plan.rasters.size();
  tiles_of_.assign(images, 0);
  received_.assign(images, 0);
  results_of_.assign(images, 0);
  for (const auto& tile : plan.tiles) ++tiles_of_.at(static_cast<std::size_t>(tile.id.image));
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

void OutputStream::run() {
  for (bool last = false; !last;) {
    std::vector<TileResults> batches;
    bool failed = false;
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, kMailPoll, [this] { return !incoming_.empty() || draining_; });
      batches.swap(incoming_);
      last = draining_;
      failed = failure_ != nullptr;
    }
    try {
      // After a failure the results are still taken, so no rank waits on a full mailbox,
      // and dropped: nothing more is written.
      for (auto& message : mailbox_.receive()) {
        TileResults batch;
        decode_results(message, batch);
        if (!failed) absorb(std::move(batch));
      }
      if (failed) continue;
      for (auto& batch : batches) absorb(std::move(batch));
      write_final_rasters();
    } catch (...) {
      const std::lock_guard lock(mutex_);
      failure_ = std::current_exception();
    }
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

void OutputStream::absorb(TileResults batch) {
  for (auto& [id, payload] : batch) {
    const auto image = static_cast<std::size_t>(id.image);
    if (image >= received_.size()) throw std::logic_error("a result for a raster the run does not have");
    if (static_cast<int>(image) < next_image_) continue;  // its raster is written
    if (held_.try_emplace(id, std::move(payload)).second) ++received_[image];
  }
}

void OutputStream::write_final_rasters() {
  while (static_cast<std::size_t>(next_image_) < tiles_of_.size() &&
         received_[static_cast<std::size_t>(next_image_)] == tiles_of_[static_cast<std::size_t>(next_image_)]) {
    write_raster(next_image_);
  }
}

void OutputStream::write_raster(int image) {
  const auto [first, last] = results_of(held_, image);
  results_of_[static_cast<std::size_t>(image)] = output_.write_raster(image, first, last, written_);
  held_.erase(first, last);
  ++next_image_;
}

std::vector<std::filesystem::path> OutputStream::finish(const RasterFailures& failed) {
  const auto& plan = output_.plan();
  for (auto image = static_cast<std::size_t>(next_image_); image < tiles_of_.size(); ++image) {
    const auto [first, last] = results_of(held_, static_cast<int>(image));
    // A raster that failed has only some of its results: none are written.
    if (failed.contains(static_cast<int>(image)) && !plan.rasters.empty()) {
      held_.erase(first, last);
      ++next_image_;
      continue;
    }
    if (received_[image] != tiles_of_[image]) throw std::logic_error("outputs finished before every tile was done");
    write_raster(static_cast<int>(image));
  }
  std::vector<RasterOutcome> outcomes(plan.rasters.size());
  for (std::size_t image = 0; image < outcomes.size(); ++image) {
    auto& outcome = outcomes[image];
    outcome.tiles = tiles_of_[image];
    outcome.tiles_done = received_[image];
    if (const auto reason = failed.find(static_cast<int>(image)); reason != failed.end()) {
      outcome.failed = true;
      outcome.error = reason->second;
    } else {
      outcome.results = results_of_[image];
    }
  }
  output_.finish_outputs(outcomes, written_);
  return std::move(written_);
}

}  // namespace mgpr::runtime
