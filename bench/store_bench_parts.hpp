#pragma once
// bench/store's parts: a communicator that times every request, rank 0's writer reduced
// to its store traffic, the beat, the tiles and the report.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "distributed/communicator.hpp"
#include "geometry/tiler.hpp"
#include "stream/store_mail.hpp"

namespace mgpr::bench::store {

struct BenchOptions {
  int ranks = 16;
  double tiles_per_s = 800;
  std::int64_t tiles = 20000;
  int batch = 16;
  int boxes = 12;
  int port = 0;
  // A network's round trip added to every request (emulated: the client waits it out
  // before asking), for a cluster's store on loopback; 0: loopback's own.
  int round_trip_us = 0;
};

// Every request's round trip of one rank, in microseconds (any of its threads).
struct Latencies {
  std::mutex mutex;
  std::vector<float> micros;
};

// A rank's client, each request timed.
class TimedCommunicator final : public runtime::ForwardingCommunicator {
 public:
  TimedCommunicator(std::unique_ptr<runtime::Communicator> inner, Latencies& into,
                    std::chrono::microseconds round_trip = {})
      : ForwardingCommunicator(std::move(inner)), into_(into), round_trip_(round_trip) {}
  std::int64_t add(const std::string& key, std::int64_t delta) override;
  std::vector<std::int64_t> counters(const std::vector<std::string>& keys) override;
  void put(const std::string& key, const std::string& bytes) override;
  std::string take(const std::string& key) override;

 private:
  template <class Call>
  auto timed(const Call& call) -> decltype(call());

  Latencies& into_;
  std::chrono::microseconds round_trip_;
};

// Rank 0's writer, as the store sees it: every 50 ms it reads every sender's count in one
// request and takes their messages, once a second the failure mail, and counts what it
// "wrote" (all it received: it writes instantly) once a wake, as OutputStream does.
class InstantWriter {
 public:
  explicit InstantWriter(runtime::Communicator& store);
  ~InstantWriter();
  InstantWriter(const InstantWriter&) = delete;
  InstantWriter& operator=(const InstantWriter&) = delete;
  // Rank 0's own tiles, which need no mail.
  void take_own(std::int64_t tiles) { own_ += tiles; }
  // Waits until `tiles` were received in all (the run's every tile).
  void until_written(std::int64_t tiles) const;

 private:
  void run(const std::stop_token& stop);

  runtime::Communicator& store_;
  runtime::WriterMailbox results_;
  runtime::WriterMailbox failures_;
  std::atomic<std::int64_t> own_{0};
  std::atomic<std::int64_t> received_{0};
  std::jthread thread_;  // last
};

// The peer watch's traffic: a beat (an add) a second and, on the other ranks, a look for
// a loss (an add of 0 where the real watch checks the key: the same one lookup); rank 0
// reads every rank's beat in one request a second.
void beat_as_the_peer_watch(runtime::Communicator& store, int rank, int ranks, const std::atomic<bool>& done);

// `count` tiles in rasters of 25 x 25 tiles of 400 px (NEON's 10,000² px tiles), in the
// run's order.
std::vector<runtime::Tile> neon_like_tiles(std::int64_t count);

// A tile's result text with `boxes` boxes, as task=detect encodes them.
std::string boxes_text(int boxes);

struct RankResult {
  std::int64_t tiles = 0;
  double finished_s = 0;
  std::map<std::string, std::int64_t> requests;  // by the key table's row
};

// The figures, as a table and one JSON line.
void report(const BenchOptions& options, std::span<const RankResult> ranks, std::span<Latencies> latencies,
            double elapsed_s, double server_cpu_s);

}  // namespace mgpr::bench::store
