#include "distributed/peer_watch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <utility>

#include "distributed/rendezvous_diagnoses.hpp"
#include "mgpr/error.hpp"
#include "mgpr/exit_codes.hpp"

namespace mgpr::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// How often a rank beats, and how often a waiting rank looks at the others' beats.
constexpr auto kBeatInterval = std::chrono::seconds(1);
// A beat that has not moved for this long has stopped: three beats missed.
constexpr auto kStoppedAfter = 3 * kBeatInterval;
// The longest sleep between two looks at a collective's arrival count.
constexpr auto kLongestPoll = std::chrono::milliseconds(20);

std::string beat_key(int rank) { return fmt::format("beat/{}", rank); }

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// Sleeps `interval` unless a stop is asked for first.
void pause(const std::stop_token& stop, std::chrono::milliseconds interval) {
  std::mutex mutex;
  std::condition_variable_any wake;
  std::unique_lock lock(mutex);
  wake.wait_for(lock, stop, interval, [] { return false; });
}

}  // namespace

PeerWatch::PeerWatch(PeerStore& store, int rank, std::vector<std::string> hosts, std::chrono::seconds peer_timeout)
    : store_(store),
      rank_(rank),
      world_size_(static_cast<int>(hosts.size())),
      hosts_(std::move(hosts)),
      peer_timeout_(peer_timeout),
      last_reply_ns_(now_ns()),
      beat_([this](const std::stop_token& stop) { beat(stop); }),
      guard_([this](const std::stop_token& stop) { guard(stop); }) {}

PeerWatch::~PeerWatch() = default;  // the jthreads ask their threads to stop and join them

// A store that is gone ends the beat quietly: the collective that needs it says why.
void PeerWatch::beat(const std::stop_token& stop) {
  while (!stop.stop_requested()) {
    try {
      store_.add(beat_key(rank_), 1);
      last_reply_ns_ = now_ns();
    } catch (const std::exception&) {
      beat_ended_ = true;
      return;
    }
    pause(stop, kBeatInterval);
  }
}

// A store call waits for rank 0's answer without a timeout of its own (LibTorch's client
// blocks in recv), so a stopped rank 0 would hold every other rank for good. When the
// beat has had no answer for peer_timeout, this rank says why and ends: the call it is
// blocked in cannot be undone. Nothing half-written looks complete (outputs are written
// under temporary names) and the journal keeps every finished tile.
void PeerWatch::guard(const std::stop_token& stop) {
  while (!stop.stop_requested() && !beat_ended_) {
    const auto silent = std::chrono::nanoseconds(now_ns() - last_reply_ns_);
    if (silent >= peer_timeout_ + kBeatInterval) {
      const auto message = store_silent_message(rank_, hosts_.empty() ? "its host" : hosts_.front(), peer_timeout_,
                                                "no answer to the rank's beat");
      std::fprintf(stderr, "mgpr: %s\n", message.c_str());
      std::fflush(stderr);
      std::_Exit(kExitFailure);
    }
    pause(stop, kBeatInterval);
  }
}

void PeerWatch::wait_for_peers() {
  const int collective = ++collectives_started_;
  const auto key = fmt::format("collective/{}", collective);
  const auto here = [&](int r) { return fmt::format("{}/{}", key, r); };
  try {
    store_.set(here(rank_), "");
    store_.add(key, 1);
    std::vector<std::int64_t> beats(static_cast<std::size_t>(world_size_), -1);
    std::vector<Clock::time_point> last_beat(static_cast<std::size_t>(world_size_), Clock::now());
    auto next_look = Clock::now();
    for (auto poll = std::chrono::milliseconds(1); store_.add(key, 0) < world_size_;
         poll = std::min(poll * 2, kLongestPoll)) {
      std::this_thread::sleep_for(poll);
      if (Clock::now() < next_look) continue;
      next_look = Clock::now() + kBeatInterval;
      std::vector<std::pair<int, std::string>> lost;
      for (int r = 0; r < world_size_; ++r) {
        const auto index = static_cast<std::size_t>(r);
        if (r == rank_ || store_.check(here(r))) continue;
        const auto beat = store_.add(beat_key(r), 0);
        if (beat != beats[index]) {
          beats[index] = beat;
          last_beat[index] = Clock::now();
        } else if (Clock::now() - last_beat[index] >= peer_timeout_) {
          lost.emplace_back(r, hosts_[index]);
        }
      }
      if (!lost.empty()) throw IoError(lost_peers_message(rank_, lost, collective, peer_timeout_));
    }
  } catch (const IoError&) {
    throw;
  } catch (const std::exception& error) {
    throw IoError(
        store_silent_message(rank_, hosts_.empty() ? "its host" : hosts_.front(), peer_timeout_, error.what()));
  }
}

void PeerWatch::look() {
  const auto size = static_cast<std::size_t>(world_size_);
  if (seen_beats_.size() != size) {
    seen_beats_.assign(size, -1);
    seen_since_.assign(size, Clock::now());
  }
  try {
    for (int r = 0; r < world_size_; ++r) {
      if (r == rank_) continue;
      const auto index = static_cast<std::size_t>(r);
      const auto beat = store_.add(beat_key(r), 0);
      if (beat != seen_beats_[index]) {
        seen_beats_[index] = beat;
        seen_since_[index] = Clock::now();
      }
    }
  } catch (const std::exception&) {
    // The guard names rank 0 when the store stays silent.
  }
}

std::vector<int> PeerWatch::stopped() {
  std::vector<int> out;
  for (std::size_t r = 0; r < seen_beats_.size(); ++r) {
    if (seen_beats_[r] >= 0 && Clock::now() - seen_since_[r] >= kStoppedAfter) out.push_back(static_cast<int>(r));
  }
  return out;
}

}  // namespace mgpr::runtime
