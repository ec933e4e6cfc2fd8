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

#include "distributed/collectives.hpp"
#include "distributed/peer_watch.hpp"

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

// Store access from the main thread and the reader threads (dynamic sharding's add): a
// TCPStore client is one socket, so one request at a time.
class SharedStore final : public KeyValueStore {
 public:
  explicit SharedStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}

  void set(const std::string& key, const std::string& value) override {
    const std::lock_guard lock(mutex_);
    store_->set(key, std::vector<std::uint8_t>(value.begin(), value.end()));
  }
  std::string get(const std::string& key) override {
    const std::lock_guard lock(mutex_);
    const auto bytes = store_->get(key);
    return {bytes.begin(), bytes.end()};
  }
  std::int64_t add(const std::string& key, std::int64_t delta) {
    const std::lock_guard lock(mutex_);
    return store_->add(key, delta);
  }
  bool check(const std::string& key) override {
    const std::lock_guard lock(mutex_);
    return store_->check({key});
  }
  std::string take(const std::string& key) {
    const std::lock_guard lock(mutex_);
    const auto bytes = store_->get(key);
    store_->deleteKey(key);
    return {bytes.begin(), bytes.end()};
  }
  void wait(const std::string& key, std::chrono::milliseconds timeout) {
    const std::lock_guard lock(mutex_);
    store_->wait({key}, timeout);
  }
  [[nodiscard]] const c10::intrusive_ptr<c10d::Store>& raw() const { return store_; }

 private:
  std::mutex mutex_;
  c10::intrusive_ptr<c10d::Store> store_;
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

 private:
  SharedStore& store_;
};
}  // namespace mgpr::runtime
