// The other ranks' side of output_stream.hpp: their results batched on their way to the
// writer (ResultMail).
#include <chrono>
#include <utility>
#include <vector>

#include "mgpr/store_keys.hpp"
#include "stream/output_stream.hpp"
#include "stream/writer_pace.hpp"

namespace mgpr::runtime {
namespace {

// Batches a rank may have on the store unread before it waits for rank 0's writer: a
// writer slower than the ranks slows them rather than growing rank 0's memory.
constexpr std::int64_t kUnreadBatches = 64;
// A message of results carries kMailTiles tiles (writer_pace.hpp), or goes after waiting
// this long. A message is five requests (its key and its count; the writer's take, a get
// and a delete, and its count of what it took): a request per 50 tiles where the ranks
// are fast (256 tiles of a dozen boxes are about 200 kB), at most 2.5 a second a rank
// where they are slow. Two seconds, not one: a GPU at 180 tiles a second then fills a
// message, which with the lease book's request a lease keeps the store under 0.1
// requests a tile at 16 ranks (docs/benchmarks.md); the writer's rows wait that much longer.
constexpr auto kMailAge = std::chrono::seconds(2);
}  // namespace

ResultMail::ResultMail(Communicator& communicator, int writer, LeaseBook* book)
    : mail_(communicator, StoreKey::kResultMail, writer, kUnreadBatches),
      book_(book),
      failures_(communicator, StoreKey::kFailureMail, writer, kUnreadBatches),
      sender_([this](const std::stop_token& stop) { send_old(stop); }) {}

ResultMail::~ResultMail() {
  sender_.request_stop();
  wake_.notify_all();
}

void ResultMail::take(TileResults batch) {
  std::unique_lock lock(mail_mutex_);
  if (send_failure_) std::rethrow_exception(std::exchange(send_failure_, nullptr));
  if (waiting_.empty()) waiting_since_ = std::chrono::steady_clock::now();
  bool urgent = false;
  for (const auto& [id, payload] : batch) urgent = urgent_.erase(id) > 0 || urgent;
  waiting_.merge(batch);
  if (urgent || static_cast<std::int64_t>(waiting_.size()) >= kMailTiles) send_waiting(lock);
}

void ResultMail::flush() {
  std::unique_lock lock(mail_mutex_);
  if (send_failure_) std::rethrow_exception(std::exchange(send_failure_, nullptr));
  send_waiting(lock);
}

void ResultMail::hurry(const TileId& tile) {
  const std::lock_guard lock(mail_mutex_);
  urgent_.insert(tile);
}

void ResultMail::send_waiting(std::unique_lock<std::mutex>& /*lock*/) {
  if (waiting_.empty()) return;
  mail_.send(encode_results(waiting_));
  if (book_ != nullptr) {
    std::vector<TileId> sent;
    sent.reserve(waiting_.size());
    for (const auto& [id, payload] : waiting_) sent.push_back(id);
    book_->delivered(sent);
  }
  waiting_.clear();
}

void ResultMail::send_old(const std::stop_token& stop) {
  std::unique_lock lock(mail_mutex_);
  while (!stop.stop_requested()) {
    wake_.wait_for(lock, stop, kMailAge / 2, [] { return false; });
    if (waiting_.empty() || send_failure_ || std::chrono::steady_clock::now() - waiting_since_ < kMailAge) continue;
    try {
      send_waiting(lock);
    } catch (...) {
      send_failure_ = std::current_exception();  // a lost run or store: the rank's own call says so
    }
  }
}

void ResultMail::raster_failed(int image, const std::string& /*reason*/) {
  const std::lock_guard lock(failures_mutex_);
  failures_.send(std::to_string(image));
  if (book_ != nullptr) book_->raster_failed(image);
}

}  // namespace mgpr::runtime
