// The communicator of a single-rank run: nothing to talk to, so no sockets at all.
#include <map>
#include <mutex>
#include <string>

#include "distributed/communicator.hpp"

namespace mgpr::runtime {
namespace {

class LocalCommunicator final : public Communicator {
 public:
  [[nodiscard]] int rank() const override { return 0; }
  [[nodiscard]] int world_size() const override { return 1; }
  void barrier() override {}
  std::vector<std::string> all_gather(const std::string& bytes) override { return {bytes}; }
  std::int64_t add(const std::string& key, std::int64_t delta) override {
    const std::lock_guard lock(mutex_);
    return counters_[key] += delta;
  }
  void put(const std::string& key, const std::string& bytes) override {
    const std::lock_guard lock(mutex_);
    values_[key] = bytes;
  }
  std::string take(const std::string& key) override {
    const std::lock_guard lock(mutex_);
    auto value = std::move(values_.at(key));
    values_.erase(key);
    return value;
  }
  std::optional<std::string> take_if_set(const std::string& key) override {
    const std::lock_guard lock(mutex_);
    const auto found = values_.find(key);
    if (found == values_.end()) return std::nullopt;
    auto value = std::move(found->second);
    values_.erase(found);
    return value;
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::int64_t> counters_;
  std::map<std::string, std::string> values_;
};

}  // namespace

std::unique_ptr<Communicator> make_local_communicator() { return std::make_unique<LocalCommunicator>(); }

}  // namespace mgpr::runtime
