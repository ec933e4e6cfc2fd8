#pragma once
// A TCPStore's semantics in memory, for ranks that are threads of one test process: get
// waits until the key is set (the run's store does, up to its timeout).
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>

#include "distributed/collectives.hpp"

namespace mgpr::test {

class MemoryStore final : public runtime::KeyValueStore {
 public:
  void set(const std::string& key, const std::string& value) override {
    {
      const std::lock_guard lock(mutex_);
      values_[key] = value;
    }
    changed_.notify_all();
  }
  std::string get(const std::string& key) override {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return values_.contains(key); });
    return values_.at(key);
  }
  bool check(const std::string& key) override {
    const std::lock_guard lock(mutex_);
    return values_.contains(key);
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::string> values_;
};

}  // namespace mgpr::test
