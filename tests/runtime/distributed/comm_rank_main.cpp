// mgpr-comm-rank: a test-only rank that joins a run from the environment (as mgpr does)
// and records what it did in OUT/rank-<RANK>.txt, so tests can check sharding, gathers
// and the local launcher with real processes.
//
//   mgpr-comm-rank launch RANKS [gpu-each] -- KEY=VALUE...   start RANKS ranks with run_local_ranks
//   mgpr-comm-rank KEY=VALUE...                              be one rank
//
// Keys: out=DIR (required), sharding=none|static|dynamic, tiles=N, threads=N, delay_ms=N,
// timeout=S (rendezvous), gather=1, gpu=1 (NCCL collectives), fail_rank=R with
// fail=CODE|kill|stop (after rendezvous and fail_after_ms=N; stop: SIGSTOP, a hung rank),
// peer_timeout=S, slow_rank=R with slow_s=S (R sleeps before the gather), sleep=S (after
// the work, before leaving), prepare_s=S (serve the store early, as mgpr does, then spend S
// seconds before joining: a slow model load), gpu_uuid=U (claim GPU U on the store before
// preparing, as a GPU rank does), inputs=DIR (expand DIR once for the run, as mgpr's
// main does, and record the rasters as "input PATH" lines, then "inputs shared"),
// stop_handlers=1 (SIGTERM, SIGUSR2 and SIGINT ask for a stop, as in mgpr, and the rank
// goes on: what its peer watch does once a stop was asked for).
#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "distributed/communicator.hpp"
#include "distributed/local_launch.hpp"
#include "distributed/rank0_value.hpp"
#include "distributed/sharding.hpp"
#include "geometry/tiler.hpp"
#include "mgpr/input_list.hpp"
#include "mgpr/store_keys.hpp"
#include "resume/stop_request.hpp"
#include "support/comm_payload.hpp"

namespace {

using namespace mgpr;
using namespace mgpr::runtime;

std::map<std::string, std::string> parse_keys(const std::vector<std::string>& arguments) {
  std::map<std::string, std::string> keys;
  for (const auto& argument : arguments) {
    const auto equals = argument.find('=');
    if (equals == std::string::npos) throw std::invalid_argument("expected KEY=VALUE, got '" + argument + "'");
    keys[argument.substr(0, equals)] = argument.substr(equals + 1);
  }
  return keys;
}

int number(const std::map<std::string, std::string>& keys, const std::string& key, int fallback) {
  const auto found = keys.find(key);
  return found == keys.end() ? fallback : std::stoi(found->second);
}

std::string variable(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "<unset>" : value;
}

int be_one_rank(const std::map<std::string, std::string>& keys) {
  follow_local_launcher();  // as mgpr's ranks do
  // A SIGTERM then asks for a stop, as in mgpr, and the rank goes on.
  if (number(keys, "stop_handlers", 0) == 1) install_stop_handlers();
  const auto ranks = rank_environment_from_env().value_or(RankEnvironment{});
  std::ofstream out(keys.at("out") + fmt::format("/rank-{}.txt", ranks.rank));
  const auto line = [&out](const std::string& text) { out << text << '\n' << std::flush; };
  line(fmt::format("pid {}", ::getpid()));
  line(
      fmt::format("env RANK={} WORLD_SIZE={} LOCAL_RANK={} LOCAL_WORLD_SIZE={} NODE_RANK={} MASTER_ADDR={} "
                  "MASTER_PORT={} CUDA_VISIBLE_DEVICES={}",
                  variable(env::kRank), variable(env::kWorldSize), variable(env::kLocalRank),
                  variable(env::kLocalWorldSize), variable(env::kNodeRank), variable(env::kMasterAddr),
                  variable(env::kMasterPort), variable(env::kCudaVisibleDevices)));

  RendezvousOptions options;
  options.timeout = std::chrono::seconds(number(keys, "timeout", 30));
  options.use_gpu = number(keys, "gpu", 0) == 1;
  options.peer_timeout = std::chrono::seconds(number(keys, "peer_timeout", 120));
  const auto early_store = serve_store_early(ranks, options);
  if (keys.contains("inputs")) {
    const std::string inputs[] = {keys.at("inputs")};
    const auto rasters = split_at_nuls(share_from_rank0(ranks, options, early_store, "inputs/rasters",
                                                        [&] { return join_with_nuls(expand_inputs(inputs, {})); }));
    for (const auto& raster : rasters) line("input " + raster);
    line("inputs shared");
    // As run_rank does after mgpr's main: asking again gives the store already served.
    if (serve_store_early(ranks, options) != early_store) return 5;
  }
  if (keys.contains("gpu_uuid")) refuse_shared_gpu(ranks, options, early_store, keys.at("gpu_uuid"));
  std::this_thread::sleep_for(std::chrono::seconds(number(keys, "prepare_s", 0)));
  const auto communicator = join_run(ranks, options, early_store);
  line("joined");

  if (number(keys, "fail_rank", -1) == ranks.rank) {
    const auto& fail = keys.at("fail");
    std::this_thread::sleep_for(std::chrono::milliseconds(number(keys, "fail_after_ms", 0)));
    if (fail == "kill") ::raise(SIGKILL);
    if (fail == "stop") {
      line("stopping");
      ::raise(SIGSTOP);  // continued (SIGCONT), the rank goes on as if nothing happened
    } else {
      return std::stoi(fail);
    }
  }

  const int tile_count = number(keys, "tiles", 0);
  const auto tiles = tile_image(0, 64 * std::max(tile_count, 1), 64, 64, 0);  // one row of tile_count tiles
  const std::span<const Tile> all(tiles.data(), static_cast<std::size_t>(tile_count));
  const std::string sharding = keys.contains("sharding") ? keys.at("sharding") : "none";
  if (sharding != "none") {
    TileFeed feed = sharding == "static" ? make_static_feed(all, ranks.rank, ranks.world_size)
                                         : make_dynamic_feed(all, *communicator, store_key(StoreKey::kNextTile));
    const auto delay = std::chrono::milliseconds(number(keys, "delay_ms", 0));
    std::mutex mutex;
    std::vector<TileId> processed;
    std::vector<std::thread> readers;
    std::exception_ptr failure;  // the first reader's, thrown once all are joined
    for (int t = 0; t < number(keys, "threads", 1); ++t) {
      readers.emplace_back([&] {
        try {
          // As mgpr's tile loop: a run that lost a rank ends at its next tile.
          while (true) {
            communicator->check_peers();
            const auto tile = feed();
            if (!tile) break;
            std::this_thread::sleep_for(delay);
            const std::lock_guard lock(mutex);
            processed.push_back(tile->id);
          }
        } catch (...) {
          const std::lock_guard lock(mutex);
          if (!failure) failure = std::current_exception();
        }
      });
    }
    for (auto& reader : readers) reader.join();
    if (failure) std::rethrow_exception(failure);
    for (const auto& id : processed) line(fmt::format("tile {} {} {}", id.image, id.row, id.column));
    // This rank's requests of the feed, as the communicator counted them.
    const auto requests = communicator->store_requests();
    const auto claims = requests.find(std::string(store_key_row(StoreKey::kNextTile).name));
    line(fmt::format("claims {}", claims == requests.end() ? 0 : claims->second));
    communicator->barrier();  // every rank done before any leaves
  }

  if (number(keys, "gather", 0) == 1) {
    if (number(keys, "slow_rank", -1) == ranks.rank)
      std::this_thread::sleep_for(std::chrono::seconds(number(keys, "slow_s", 0)));
    const auto gathered = communicator->all_gather(test::gather_payload(ranks.rank));
    for (std::size_t r = 0; r < gathered.size(); ++r) {
      line(fmt::format("gathered {} {} {}", r, gathered[r].size(), test::fnv1a(gathered[r])));
    }
    communicator->barrier();
  }
  std::this_thread::sleep_for(std::chrono::seconds(number(keys, "sleep", 0)));
  line("done");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> arguments(argv + 1, argv + argc);
  try {
    if (!arguments.empty() && arguments[0] == "launch") {
      const int ranks = std::stoi(arguments.at(1));
      const bool gpu_each = arguments.at(2) == "gpu-each";
      auto separator = std::find(arguments.begin(), arguments.end(), "--");
      if (separator == arguments.end()) throw std::invalid_argument("launch needs -- before the rank's arguments");
      return run_local_ranks(ranks, gpu_each, std::vector<std::string>(separator + 1, arguments.end()));
    }
    return be_one_rank(parse_keys(arguments));
  } catch (const std::exception& error) {
    std::cerr << "mgpr-comm-rank: " << error.what() << '\n';
    return 2;
  }
}
