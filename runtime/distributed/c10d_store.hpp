#pragma once
// The run's c10d TCPStore as the communicator uses it (communicator_c10d.cpp): one request
// at a time from any thread, and c10's errors in plain words. Only the distributed
// stage's own sources include this; the rest see Communicator.
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "distributed/collectives.hpp"
#include "distributed/peer_watch.hpp"
#include "distributed/store_traffic.hpp"

namespace mgpr::runtime {

// c10::Error's what() carries a C++ backtrace: not for a user's eyes. Whatever of one is
// left in the text (an error that quotes another's what()) is cut off too.
inline std::string cause_of(const std::exception& error) {
  std::string text = error.what();
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&error)) text = c10_error->what_without_backtrace();
  for (const char* backtrace_start : {"Exception raised from ", "frame #"}) {
    if (const auto at = text.find(backtrace_start); at != std::string::npos) text.erase(at);
  }
  // Trailing newline or full stop: the cause sits inside a sentence of ours.
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '.')) text.pop_back();
  return text;
}

// The store's server on its classic socket loop, where the LibTorch has the choice (2.x
// serves it from libuv by default). Under the results streamed to rank 0 while tiles run
// (hundreds of kilobytes a message, thousands of requests a second), the libuv server
// closed a rank's connection now and then, without a word (`failed to recv, got 0
// bytes` on the rank): 3 of about 10 runs of the 65536² mosaic at 4 million boxes.
// A template, so that a LibTorch without the field (1.13) never compiles the assignment.
template <typename Options>
void serve_from_classic_loop(Options& options) {
  if constexpr (requires { options.useLibUV; }) options.useLibUV = false;
}

// Every key's value in one request where the store has multiGet (LibTorch 2.x), else
// nothing (the caller asks key by key). A template for the same reason as above.
template <typename Store>
std::vector<std::vector<std::uint8_t>> multi_get_where_possible(Store& store, const std::vector<std::string>& keys) {
  if constexpr (requires { store.multiGet(keys); }) {
    if (store.hasExtendedApi()) return store.multiGet(keys);
  }
  return {};
}

// Store access from the main thread and the reader threads (dynamic sharding's add): a
// TCPStore client is one socket, so one request at a time.
class SharedStore final : public KeyValueStore {
 public:
  explicit SharedStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}

  void set(const std::string& key, const std::string& value) override {
    traffic_.count(key);
    const std::lock_guard lock(mutex_);
    store_->set(key, std::vector<std::uint8_t>(value.begin(), value.end()));
  }
  std::string get(const std::string& key) override {
    traffic_.count(key);
    const std::lock_guard lock(mutex_);
    const auto bytes = store_->get(key);
    return {bytes.begin(), bytes.end()};
  }
  std::int64_t add(const std::string& key, std::int64_t delta) {
    traffic_.count(key);
    const std::lock_guard lock(mutex_);
    return store_->add(key, delta);
  }
  bool check(const std::string& key) override {
    traffic_.count(key);
    const std::lock_guard lock(mutex_);
    return store_->check({key});
  }
  std::string take(const std::string& key) {
    traffic_.count(key, 2);  // a get and a delete
    const std::lock_guard lock(mutex_);
    const auto bytes = store_->get(key);
    store_->deleteKey(key);
    return {bytes.begin(), bytes.end()};
  }
  // The counters under `keys` (each made by an add, so each is there) in one round trip
  // where this LibTorch's store has multiGet (2.x; its server answers every key of one
  // request), else one get each.
  std::vector<std::int64_t> counters(const std::vector<std::string>& keys) {
    if (keys.empty()) return {};
    std::vector<std::vector<std::uint8_t>> values;
    {
      const std::lock_guard lock(mutex_);
      values = multi_get_where_possible(*store_, keys);
      if (!values.empty()) {
        traffic_.count(keys.front());  // one request for them all
      } else {
        for (const auto& key : keys) {
          traffic_.count(key);
          values.push_back(store_->get(key));
        }
      }
    }
    std::vector<std::int64_t> numbers;
    for (const auto& value : values) numbers.push_back(std::stoll(std::string(value.begin(), value.end())));
    return numbers;
  }
  void wait(const std::string& key, std::chrono::milliseconds timeout) {
    traffic_.count(key);
    const std::lock_guard lock(mutex_);
    store_->wait({key}, timeout);
  }
  // Gloo's requests go through raw() and are not counted: collectives only, a few a run.
  [[nodiscard]] const c10::intrusive_ptr<c10d::Store>& raw() const { return store_; }
  [[nodiscard]] const StoreTraffic& traffic() const { return traffic_; }

 private:
  std::mutex mutex_;
  c10::intrusive_ptr<c10d::Store> store_;
  StoreTraffic traffic_;
};

// The peer watch's view of the store, with c10's errors as plain ones: their what()
// carries a C++ backtrace.
class PlainPeerStore final : public PeerStore {
  template <class Call>
  static auto plain(const Call& call) {
    try {
      return call();
    } catch (const c10::Error& error) {
      throw std::runtime_error(cause_of(error));
    }
  }

 public:
  explicit PlainPeerStore(SharedStore& store) : store_(store) {}
  void set(const std::string& key, const std::string& value) override {
    plain([&] { store_.set(key, value); });
  }
  std::int64_t add(const std::string& key, std::int64_t delta) override {
    return plain([&] { return store_.add(key, delta); });
  }
  bool check(const std::string& key) override {
    return plain([&] { return store_.check(key); });
  }
  std::string get(const std::string& key) override {
    return plain([&] { return store_.get(key); });
  }
  std::vector<std::int64_t> counters(const std::vector<std::string>& keys) override {
    return plain([&] { return store_.counters(keys); });
  }

 private:
  SharedStore& store_;
};
}  // namespace mgpr::runtime
