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
#include "mgpr/store_keys.hpp"
#include "resume/stop_request.hpp"

namespace mgpr::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// How often a rank beats, and how often a waiting rank looks at the others' beats.
constexpr auto kBeatInterval = std::chrono::seconds(1);
// A beat that has not moved for this long has stopped: three beats missed.
constexpr auto kStoppedAfter = 3 * kBeatInterval;
// The longest sleep between two looks at a collective's arrival count.
constexpr auto kLongestArrivalPoll = std::chrono::milliseconds(20);
// How long a watch waits on the lines at a time: also how soon it sees stop().
constexpr auto kLinePoll = std::chrono::milliseconds(200);
// How long a rank may take to connect its line; a line not made leaves the beats alone.
constexpr auto kLineConnect = std::chrono::seconds(5);
// Once a stop was asked for (SIGTERM, SIGUSR2), a beat silent this long is a rank lost:
// the stop's grace (10 s for `mgpr gpus=N`, Slurm's KillWait) is shorter than
// peer_timeout, and every rank that lives beats on however busy it is.
constexpr auto kStopPatience = std::chrono::seconds(5);

std::string beat_key(int rank) { return store_key(StoreKey::kPeerBeat, rank); }

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

PeerWatch::PeerWatch(PeerStore& store, int rank, std::vector<std::string> hosts, std::chrono::seconds peer_timeout,
                     std::string rank0_address, bool survive_rank_loss)
    : store_(store),
      rank_(rank),
      world_size_(static_cast<int>(hosts.size())),
      hosts_(std::move(hosts)),
      peer_timeout_(peer_timeout),
      survive_rank_loss_(survive_rank_loss),
      last_reply_ns_(now_ns()),
      rank0_address_(std::move(rank0_address)),
      // Made before the tiles start, so that a rank killed in its first second is seen at
      // once too: rank 0 says where it listens before it returns (its next store call may
      // wait on the others), and the others connect as soon as it has.
      lines_(rank == 0 ? listen_for_lines() : nullptr),
      line_(rank == 0 ? nullptr : line_to_rank0(Clock::now() + kLineConnect, {}, kLongestArrivalPoll)),
      beat_([this](const std::stop_token& stop) { beat(stop); }),
      guard_([this](const std::stop_token& stop) { guard(stop); }),
      watch_([this](const std::stop_token& stop) { watch(stop); }) {}

PeerWatch::~PeerWatch() = default;  // the jthreads ask their threads to stop and join them

void PeerWatch::stop(bool in_order) {
  in_order_ = in_order;
  leaving_ = true;
  for (auto* thread : {&watch_, &beat_, &guard_}) {
    thread->request_stop();
    if (thread->joinable()) thread->join();
  }
}

// A store that is gone ends the beat: for the others, rank 0 ended (the call that needs
// the store says so too).
void PeerWatch::beat(const std::stop_token& stop) {
  auto previous = Clock::now();
  while (!stop.stop_requested()) {
    const auto asked = Clock::now();
    // This rank was stopped (SIGSTOP, a frozen node) longer than the others wait: under
    // on_rank_loss=continue rank 0 may have gone on without it, and then uses none of its
    // results (fencing); it says so and ends.
    const bool was_frozen = asked - previous > peer_timeout_;
    previous = asked;
    try {
      store_.add(beat_key(rank_), 1);
      last_reply_ns_ = now_ns();
      if (was_frozen && survive_rank_loss_ && rank_ != 0 && store_.check(store_key(StoreKey::kPeerVerdict, rank_))) {
        {
          const std::lock_guard lock(lost_mutex_);
          fenced_ = true;
        }
        record_loss({}, fmt::format("rank {}: rank 0 went on without this rank, which it found {}; it uses none of "
                                    "its results from then on, so this rank ends",
                                    rank_, store_.get(store_key(StoreKey::kPeerVerdict, rank_))));
      }
      if (rank_ != 0 && !lost_known_ && store_.check(store_key(StoreKey::kPeerLost)))
        record_loss({}, store_.get(store_key(StoreKey::kPeerLost)));
    } catch (const std::exception& error) {
      beat_ended_ = true;
      // Refused at once: rank 0's end of the connection closed. A call that waited out
      // the store's timeout is the guard's to name (a rank 0 stopped, not ended).
      if (rank_ != 0 && Clock::now() - asked < std::chrono::milliseconds(peer_timeout_) / 2) {
        record_loss({0}, rank0_stopped_answering_message(hosts_.front(), rank_, error.what()));
      }
      return;
    }
    pause(stop, kBeatInterval);
  }
}

void PeerWatch::watch(const std::stop_token& stop) {
  try {
    if (rank_ == 0) {
      watch_every_rank(stop);
    } else {
      watch_rank0(stop);
    }
  } catch (const std::exception&) {
    // A store that fails here fails the calls that need it too, which say why.
  }
}

// Every line, and once a second every beat.
void PeerWatch::watch_every_rank(const std::stop_token& stop) {
  const auto size = static_cast<std::size_t>(world_size_);
  std::vector<std::int64_t> beats(size, -1);
  std::vector<Clock::time_point> moved(size, Clock::now());
  // Each beat counter made now, so that one request reads them all (a rank not yet
  // beating reads as 0, and an add of 0 changes none a rank made first).
  std::vector<std::string> beat_keys;
  for (int r = 1; r < world_size_; ++r) {
    beat_keys.push_back(beat_key(r));
    (void)store_.add(beat_keys.back(), 0);
  }
  auto next_look = Clock::now() + kBeatInterval;
  while (!stop.stop_requested()) {
    if (const auto ended = lines_->closed_without_goodbye(kLinePoll); !ended.empty() && !leaving_) {
      record_loss(ended, ranks_ended_message(with_hosts(ended)));
    }
    ++looks_;
    if (Clock::now() < next_look) continue;
    next_look = Clock::now() + kBeatInterval;
    const auto patience =
        stop_signal() != 0 ? std::min<std::chrono::seconds>(peer_timeout_, kStopPatience) : peer_timeout_;
    std::vector<int> silent;
    const auto every_beat = store_.counters(beat_keys);  // one request for every rank
    for (int r = 1; r < world_size_; ++r) {
      const auto index = static_cast<std::size_t>(r);
      const auto beat = every_beat[index - 1];
      if (beat != beats[index]) {
        beats[index] = beat;
        moved[index] = Clock::now();
      } else if (Clock::now() - moved[index] >= patience) {
        silent.push_back(r);
      }
    }
    if (!silent.empty() && !leaving_) record_loss(silent, ranks_silent_message(with_hosts(silent), patience));
  }
}

// Rank 0's end of every line, its port on the store (a store that fails here leaves the
// beats as the only watch; the calls that need the store say why).
std::unique_ptr<Rank0Lines> PeerWatch::listen_for_lines() {
  auto lines = std::make_unique<Rank0Lines>();
  try {
    if (lines->port() > 0) store_.set(store_key(StoreKey::kPeerLinePort), std::to_string(lines->port()));
  } catch (const std::exception&) {
    // The beats still watch; the calls that need the store say why it failed.
  }
  return lines;
}

// The line to rank 0, once rank 0 said where it listens (nullptr if it has not by
// `given_up`, or its store failed: the beats are then the only watch).
std::unique_ptr<LineToRank0> PeerWatch::line_to_rank0(Clock::time_point given_up, const std::stop_token& stop,
                                                      std::chrono::milliseconds poll) {
  try {
    while (!store_.check(store_key(StoreKey::kPeerLinePort))) {
      if (stop.stop_requested() || Clock::now() > given_up) return nullptr;
      pause(stop, poll);
    }
    const auto port = std::stoi(store_.get(store_key(StoreKey::kPeerLinePort)));
    return std::make_unique<LineToRank0>(rank0_address_, port, rank_, kLineConnect);
  } catch (const std::exception&) {
    return nullptr;  // the calls that need the store say why
  }
}

void PeerWatch::watch_rank0(const std::stop_token& stop) {
  if (!line_) line_ = line_to_rank0(Clock::now() + peer_timeout_, stop, kLinePoll);
  if (!line_) return;
  while (line_->connected() && !stop.stop_requested()) {
    if (line_->rank0_closed(kLinePoll)) {
      if (!leaving_) {
        record_loss({0}, rank0_stopped_answering_message(hosts_.front(), rank_, "its line to this rank closed"));
      }
      return;
    }
    ++looks_;
  }
  if (in_order_) line_->goodbye();
}

// A store call waits for rank 0's answer without a timeout of its own (LibTorch's client
// blocks in recv), so a stopped rank 0 would hold every other rank for good. When the
// beat has had no answer for peer_timeout, this rank says why and ends: the call it is
// blocked in cannot be undone. Nothing half-written looks complete (outputs are written
// under temporary names) and the journal keeps every finished tile.
void PeerWatch::guard(const std::stop_token& stop) {
  auto last_look = Clock::now();
  while (!stop.stop_requested() && !beat_ended_) {
    // A guard that slept far past its interval was stopped with its whole process
    // (SIGSTOP, a frozen node): the silence was this rank's own, and the beat, woken too,
    // gets a fresh wait.
    if (Clock::now() - last_look > 3 * kBeatInterval) last_reply_ns_ = now_ns();
    last_look = Clock::now();
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
  check();
  const int collective = ++collectives_started_;
  const auto key = store_key(StoreKey::kCollectiveCount, collective);
  const auto here = [&](int r) { return store_key(StoreKey::kCollectiveArrival, collective, r); };
  try {
    store_.set(here(rank_), "");
    store_.add(key, 1);
    std::vector<std::int64_t> beats(static_cast<std::size_t>(world_size_), -1);
    std::vector<Clock::time_point> last_beat(static_cast<std::size_t>(world_size_), Clock::now());
    auto next_look = Clock::now();
    for (auto poll = std::chrono::milliseconds(1); store_.add(key, 0) < world_size_;
         poll = std::min(poll * 2, kLongestArrivalPoll)) {
      std::this_thread::sleep_for(poll);
      check();
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
    // Rank 0 ended: its line or the beat says so within moments, and names it better.
    for (int look = 0; look < 50 && !lost_known_; ++look) std::this_thread::sleep_for(kLongestArrivalPoll);
    check();
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
