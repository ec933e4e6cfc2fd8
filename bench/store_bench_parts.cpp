#include "store_bench_parts.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "mgpr/store_keys.hpp"
#include "mgpr/summary.hpp"
#include "stream/writer_pace.hpp"
#include "tasks/task_output.hpp"

namespace mgpr::bench::store {

using Clock = std::chrono::steady_clock;

template <class Call>
auto TimedCommunicator::timed(const Call& call) -> decltype(call()) {
  const auto start = Clock::now();
  if (round_trip_.count() > 0) std::this_thread::sleep_for(round_trip_);
  auto result = call();
  const auto micros = std::chrono::duration<float, std::micro>(Clock::now() - start).count();
  const std::lock_guard lock(into_.mutex);
  into_.micros.push_back(micros);
  return result;
}

std::int64_t TimedCommunicator::add(const std::string& key, std::int64_t delta) {
  return timed([&] { return ForwardingCommunicator::add(key, delta); });
}
std::vector<std::int64_t> TimedCommunicator::counters(const std::vector<std::string>& keys) {
  return timed([&] { return ForwardingCommunicator::counters(keys); });
}
void TimedCommunicator::put(const std::string& key, const std::string& bytes) {
  (void)timed([&] {
    ForwardingCommunicator::put(key, bytes);
    return 0;
  });
}
std::string TimedCommunicator::take(const std::string& key) {
  return timed([&] { return ForwardingCommunicator::take(key); });
}

InstantWriter::InstantWriter(runtime::Communicator& store)
    : store_(store),
      results_(store, StoreKey::kResultMail, 0),
      failures_(store, StoreKey::kFailureMail, 0),
      thread_([this](const std::stop_token& stop) { run(stop); }) {}

InstantWriter::~InstantWriter() { thread_.request_stop(); }

void InstantWriter::until_written(std::int64_t tiles) const {
  while (received_.load() + own_.load() < tiles) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

void InstantWriter::run(const std::stop_token& stop) {
  auto next_failure_look = Clock::now();
  std::int64_t counted = 0;
  while (!stop.stop_requested()) {
    std::this_thread::sleep_for(runtime::kMailPoll);  // as the writer (output_stream.cpp)
    for (const auto& message : results_.receive()) {
      runtime::TileResults batch;
      runtime::decode_results(message, batch);
      received_ += static_cast<std::int64_t>(batch.size());
    }
    if (Clock::now() >= next_failure_look) {
      (void)failures_.receive();
      next_failure_look = Clock::now() + std::chrono::seconds(1);
    }
    if (const auto written = received_.load() + own_.load(); written > counted) {
      runtime::count_written(store_, 0, written - counted);
      counted = written;
    }
  }
}

void beat_as_the_peer_watch(runtime::Communicator& store, int rank, int ranks, const std::atomic<bool>& done) {
  std::vector<std::string> beats;
  for (int r = 1; r < ranks; ++r) beats.push_back(store_key(StoreKey::kPeerBeat, r));
  if (rank == 0) {
    for (const auto& key : beats) (void)store.add(key, 0);
  }
  while (!done.load()) {
    (void)store.add(store_key(StoreKey::kPeerBeat, rank), 1);
    if (rank == 0) {
      (void)store.counters(beats);
    } else {
      (void)store.add(store_key(StoreKey::kPeerLost), 0);
    }
    for (int tenth = 0; tenth < 10 && !done.load(); ++tenth)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::vector<runtime::Tile> neon_like_tiles(std::int64_t count) {
  constexpr int kSide = 25;
  std::vector<runtime::Tile> tiles;
  for (int image = 0; static_cast<std::int64_t>(tiles.size()) < count; ++image) {
    for (const auto& tile : runtime::tile_image(image, kSide * 400, kSide * 400, 400, 0)) {
      if (static_cast<std::int64_t>(tiles.size()) == count) break;
      tiles.push_back(tile);
    }
  }
  return tiles;
}

std::string boxes_text(int boxes) {
  std::string text;
  for (int i = 0; i < boxes; ++i) text += "123.456789 234.567891 156.789123 267.891234 0.87654321 0 0;";
  return text;
}

namespace {

float percentile(std::vector<float>& values, double fraction) {
  if (values.empty()) return 0;
  const auto at = static_cast<std::size_t>(fraction * static_cast<double>(values.size() - 1));
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(at), values.end());
  return values[at];
}

}  // namespace

void report(const BenchOptions& options, std::span<const RankResult> ranks, std::span<Latencies> latencies,
            double elapsed_s, double server_cpu_s) {
  std::int64_t tiles = 0;
  std::int64_t requests = 0;
  double first = 1e300;
  double last = 0;
  std::vector<RankSummary> summaries;  // for the run's line of requests by row
  for (const auto& rank : ranks) {
    tiles += rank.tiles;
    for (const auto& [row, count] : rank.requests) requests += count;
    summaries.emplace_back();
    summaries.back().tiles = rank.tiles;
    summaries.back().store_requests = rank.requests;
    first = std::min(first, rank.finished_s);
    last = std::max(last, rank.finished_s);
  }
  std::vector<float> all;
  for (auto& rank : latencies) all.insert(all.end(), rank.micros.begin(), rank.micros.end());
  const double rate = static_cast<double>(tiles) / elapsed_s;
  const double batch_s = options.batch * options.ranks / options.tiles_per_s;
  const auto p50 = percentile(all, 0.5);
  const auto p99 = percentile(all, 0.99);
  fmt::print(
      "ranks {}, target {:.0f} tiles/s, batch {}, {} boxes a tile, round trip +{} us: {} tiles in {:.2f} s = {:.0f} "
      "tiles/s ({:.2f} of "
      "the target)\n"
      "store: {} requests, {:.3f} a tile, {:.0f} a second; latency p50 {:.0f} us, p99 {:.0f} us; server CPU {:.2f} s "
      "({:.0f} % of one core)\n"
      "ranks finished within {:.2f} s of each other (a batch takes {:.2f} s)\n{}\n",
      options.ranks, options.tiles_per_s, options.batch, options.boxes, options.round_trip_us, tiles, elapsed_s, rate,
      rate / options.tiles_per_s, requests, static_cast<double>(requests) / static_cast<double>(tiles),
      static_cast<double>(requests) / elapsed_s, p50, p99, server_cpu_s, 100 * server_cpu_s / elapsed_s, last - first,
      batch_s, store_requests_line(summaries));
  fmt::print(
      "{{\"ranks\": {}, \"target_tiles_per_s\": {}, \"tiles_per_s\": {:.1f}, \"requests_per_tile\": {:.4f}, "
      "\"requests_per_s\": {:.0f}, \"p50_us\": {:.0f}, \"p99_us\": {:.0f}, \"server_cpu_fraction\": {:.3f}, "
      "\"finish_spread_s\": {:.3f}, \"batch_s\": {:.3f}, \"round_trip_us\": {}}}\n",
      options.ranks, options.tiles_per_s, rate, static_cast<double>(requests) / static_cast<double>(tiles),
      static_cast<double>(requests) / elapsed_s, p50, p99, server_cpu_s / elapsed_s, last - first, batch_s,
      options.round_trip_us);
}

}  // namespace mgpr::bench::store
