// The run's store under N ranks, without their models: what rank 0's c10d server sustains
// when every rank claims tiles, mails its results to the writer, is paced by it, counts
// its progress and beats, at a target tile rate. The tile feed (leases), the pacing, the
// result mail and the writer's mailboxes are mgpr's own classes over real store clients
// (distributed/store_client.hpp), one connection a rank as in a run; the beat and the
// peer watch's once-a-second read, and the progress count, are done as they do them. The
// server runs in a child process, so its CPU time is its own.
//
// Reports the tile rate sustained against the target, the requests a tile and a second,
// each request's latency (p50, p99), the server's CPU and how far apart the ranks finished
// (against one batch's time). Not a test; figures go to docs/benchmarks.md with the command.
#include <fmt/format.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "bench_timing.hpp"
#include "distributed/sharding.hpp"
#include "distributed/store_client.hpp"
#include "mgpr/exit_codes.hpp"
#include "mgpr/store_keys.hpp"
#include "store_bench_parts.hpp"
#include "stream/output_stream.hpp"
#include "stream/writer_pace.hpp"

namespace {

namespace rt = mgpr::runtime;
using mgpr::StoreKey;
using mgpr::bench::Clock;
using mgpr::bench::seconds_since;
using mgpr::bench::store::BenchOptions;
using mgpr::bench::store::Latencies;
using mgpr::bench::store::RankResult;
using mgpr::bench::store::TimedCommunicator;

// The server's user and system CPU seconds so far (/proc/PID/stat, fields 14 and 15).
double cpu_seconds_of(pid_t pid) {
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i >= 14) ticks += std::stod(field);
  }
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// The store's server in a child process, killed at the end (or with the parent); its port
// (the kernel's choice for 0) comes back through a pipe.
pid_t start_server(int& port, int clients) {
  int ready[2];
  if (::pipe(ready) != 0) throw std::runtime_error("pipe failed");
  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error("fork failed");
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    const auto served = rt::serve_store(port, clients, std::chrono::seconds(60));
    (void)::write(ready[1], &served.port, sizeof served.port);
    ::pause();
    ::_exit(0);
  }
  ::close(ready[1]);
  if (::read(ready[0], &port, sizeof port) != sizeof port) throw std::runtime_error("the store's server did not start");
  ::close(ready[0]);
  return child;
}

// One rank: claims leases of tiles (paced by the writer), "computes" each batch for its
// share of the target rate, mails its results, counts its progress once a second, beats.
RankResult run_rank(const BenchOptions& options, int rank, std::span<const rt::Tile> tiles, Latencies& latencies,
                    Clock::time_point start) {
  TimedCommunicator store(
      rt::connect_store_client("127.0.0.1", options.port, rank, options.ranks, std::chrono::seconds(60)), latencies,
      std::chrono::microseconds(options.round_trip_us));
  std::atomic<bool> done{false};
  std::jthread beat([&] { mgpr::bench::store::beat_as_the_peer_watch(store, rank, options.ranks, done); });
  std::unique_ptr<mgpr::bench::store::InstantWriter> writer;
  if (rank == 0) writer = std::make_unique<mgpr::bench::store::InstantWriter>(store);
  std::unique_ptr<rt::LeaseBook> book;  // as rank_run.cpp: every rank but the writer's
  std::unique_ptr<rt::ResultMail> mail;
  if (rank != 0) {
    book = std::make_unique<rt::LeaseBook>(tiles, store);
    mail = std::make_unique<rt::ResultMail>(store, 0, book.get());
  }
  const auto limit = rt::unwritten_limit(tiles, options.batch, options.ranks);
  auto feed = rt::paced_by_writer(rt::make_dynamic_feed(tiles, store, mgpr::store_key(StoreKey::kNextTile), book.get()),
                                  tiles, store, 0, limit);
  const auto batch_time = std::chrono::duration<double>(options.batch * options.ranks / options.tiles_per_s);
  const std::string payload = mgpr::bench::store::boxes_text(options.boxes);
  RankResult result;
  std::int64_t counted = 0;
  auto next_batch = Clock::now();
  auto last_count = Clock::time_point{};
  for (bool more = true; more;) {
    rt::TileResults batch;
    for (int i = 0; i < options.batch; ++i) {
      const auto tile = feed();
      if (!tile) {
        more = false;
        break;
      }
      batch.emplace(tile->id, payload);
    }
    if (batch.empty()) break;
    next_batch += std::chrono::duration_cast<Clock::duration>(batch_time);
    std::this_thread::sleep_until(next_batch);
    result.tiles += static_cast<std::int64_t>(batch.size());
    if (mail) mail->take(std::move(batch));
    if (writer) writer->take_own(static_cast<std::int64_t>(batch.size()));
    if (const auto now = Clock::now(); now - last_count >= std::chrono::seconds(1)) {  // as tile_loop.cpp
      store.add(mgpr::store_key(StoreKey::kTilesDone), result.tiles - counted);
      counted = result.tiles;
      last_count = now;
    }
  }
  if (mail) mail->flush();
  result.finished_s = seconds_since(start);
  if (writer) writer->until_written(static_cast<std::int64_t>(tiles.size()));
  done = true;
  result.requests = store.store_requests();
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  BenchOptions options;
  CLI::App app{"The run's store under N ranks at a target tile rate, without models (bench/store)."};
  app.add_option("--ranks", options.ranks, "ranks, one store connection each (default 16)")->check(CLI::Range(2, 1024));
  app.add_option("--tiles-per-s", options.tiles_per_s, "the whole job's target tile rate (default 800)")
      ->check(CLI::PositiveNumber);
  app.add_option("--tiles", options.tiles, "tiles in the run, rasters of 25 x 25 tiles (default 20000)")
      ->check(CLI::Range(1, 100'000'000));
  app.add_option("--batch", options.batch, "tiles a batch (default 16)")->check(CLI::Range(1, 4096));
  app.add_option("--boxes", options.boxes, "boxes a tile, as result text (default 12)")->check(CLI::Range(0, 100000));
  app.add_option("--round-trip-us", options.round_trip_us,
                 "a network's round trip added to every request, in microseconds (default 0: loopback's own)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--port", options.port, "the store's port (default 0: one the kernel picks)")
      ->check(CLI::Range(0, 65535));
  CLI11_PARSE(app, argc, argv);

  const pid_t server = start_server(options.port, options.ranks);
  const auto tiles = mgpr::bench::store::neon_like_tiles(options.tiles);
  std::vector<Latencies> latencies(static_cast<std::size_t>(options.ranks));
  std::vector<RankResult> results(static_cast<std::size_t>(options.ranks));
  const double cpu_before = cpu_seconds_of(server);
  const auto start = Clock::now();
  {
    std::vector<std::jthread> ranks;
    for (int rank = 0; rank < options.ranks; ++rank) {
      ranks.emplace_back([&, rank] {
        const auto index = static_cast<std::size_t>(rank);
        results[index] = run_rank(options, rank, tiles, latencies[index], start);
      });
    }
  }
  const double elapsed = seconds_since(start);
  const double server_cpu = cpu_seconds_of(server) - cpu_before;
  ::kill(server, SIGKILL);
  ::waitpid(server, nullptr, 0);
  mgpr::bench::store::report(options, results, latencies, elapsed, server_cpu);
  return 0;
}
