#pragma once
// A communicator of the run's store alone, and the store's server alone: no rendezvous,
// no peer watch, no collectives. For programs that measure the store with many clients in
// one process (bench/store): each client is one connection, its requests counted as a
// rank's are (store_traffic.hpp), so the real tile feed, mail and pacing run over it.
#include <chrono>
#include <memory>
#include <string>

#include "distributed/communicator.hpp"

namespace mgpr::runtime {

// A store served on this host until `server` is released (c10d's classic server, as a
// run's rank 0 serves it), on `port`: the one asked for, or the one the kernel chose for 0.
struct ServedStore {
  std::shared_ptr<void> server;
  int port = 0;
};
// Throws UsageError naming a port taken.
ServedStore serve_store(int port, int clients, std::chrono::seconds timeout);

// Rank `rank` of `world_size` on the store at address:port. barrier and all_gather throw
// std::logic_error: a client of the store alone has no collectives.
std::unique_ptr<Communicator> connect_store_client(const std::string& address, int port, int rank, int world_size,
                                                   std::chrono::seconds timeout);

}  // namespace mgpr::runtime
