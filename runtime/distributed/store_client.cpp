#include "distributed/store_client.hpp"

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <stdexcept>

#include "distributed/c10d_store.hpp"
#include "mgpr/error.hpp"

namespace mgpr::runtime {
namespace {

class StoreClient final : public Communicator {
 public:
  StoreClient(std::shared_ptr<SharedStore> store, int rank, int world_size)
      : store_(std::move(store)), rank_(rank), world_size_(world_size) {}

  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int world_size() const override { return world_size_; }
  void barrier() override { throw std::logic_error("a client of the store alone has no collectives"); }
  std::vector<std::string> all_gather(const std::string& /*bytes*/) override {
    throw std::logic_error("a client of the store alone has no collectives");
  }
  std::int64_t add(const std::string& key, std::int64_t delta) override { return store_->add(key, delta); }
  std::vector<std::int64_t> counters(const std::vector<std::string>& keys) override { return store_->counters(keys); }
  void put(const std::string& key, const std::string& bytes) override { store_->set(key, bytes); }
  std::string take(const std::string& key) override { return store_->take(key); }
  std::optional<std::string> take_if_set(const std::string& key) override {
    if (!store_->check(key)) return std::nullopt;
    return store_->take(key);
  }
  [[nodiscard]] std::map<std::string, std::int64_t> store_requests() const override {
    return store_->traffic().by_row();
  }

 private:
  std::shared_ptr<SharedStore> store_;
  int rank_;
  int world_size_;
};

c10d::TCPStoreOptions options_for(int port, bool server, int clients, std::chrono::seconds timeout) {
  c10d::TCPStoreOptions options;  // fields assigned one by one: 2.x added more
  options.port = static_cast<std::uint16_t>(port);
  options.isServer = server;
  options.numWorkers = static_cast<std::size_t>(clients);
  options.waitWorkers = false;
  options.timeout = timeout;
  serve_from_classic_loop(options);  // as a run's rank 0 serves it
  return options;
}

}  // namespace

ServedStore serve_store(int port, int clients, std::chrono::seconds timeout) {
  try {
    auto server = std::make_shared<c10d::TCPStore>("127.0.0.1", options_for(port, true, clients, timeout));
    const int chosen = server->getPort();
    return {std::move(server), chosen};
  } catch (const std::exception& error) {
    throw UsageError(fmt::format("cannot serve a store on port {}: {}", port, cause_of(error)));
  }
}

std::unique_ptr<Communicator> connect_store_client(const std::string& address, int port, int rank, int world_size,
                                                   std::chrono::seconds timeout) {
  try {
    auto store = c10::make_intrusive<c10d::TCPStore>(address, options_for(port, false, world_size, timeout));
    return std::make_unique<StoreClient>(std::make_shared<SharedStore>(std::move(store)), rank, world_size);
  } catch (const std::exception& error) {
    throw UsageError(fmt::format("cannot reach the store at {}:{}: {}", address, port, cause_of(error)));
  }
}

}  // namespace mgpr::runtime
