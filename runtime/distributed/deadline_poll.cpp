#include "distributed/deadline_poll.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "distributed/collectives.hpp"
#include "distributed/rendezvous_diagnoses.hpp"
#include "mgpr/error.hpp"

namespace mgpr::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// A collective of a few bytes ends within microseconds: the first polls come fast, then
// back off so a long wait costs no CPU worth naming.
constexpr auto kFirstPoll = std::chrono::microseconds(20);
constexpr auto kLongestPoll = std::chrono::milliseconds(10);
constexpr auto kLookEvery = std::chrono::seconds(1);
// More names than this make a message nobody reads: the rest as a count.
constexpr std::size_t kNamedUpTo = 8;

std::string name_ranks(const std::vector<int>& ranks, const std::vector<std::string>& hosts) {
  const auto word = ranks.size() == 1 ? "rank" : "ranks";
  if (hosts.empty() || ranks.size() > kNamedUpTo) return fmt::format("{} {}", word, format_rank_list(ranks));
  std::string text;
  for (const int r : ranks) {
    if (!text.empty()) text += ", ";
    text += fmt::format("rank {}", r);
    if (static_cast<std::size_t>(r) < hosts.size()) text += fmt::format(" on {}", hosts[static_cast<std::size_t>(r)]);
  }
  return text;
}

class KeysArrival final : public PendingOperation {
 public:
  KeysArrival(KeyValueStore& store, const std::vector<std::string>& keys) : store_(store), waiting_(keys) {}
  OperationStatus poll() override {
    std::erase_if(waiting_, [&](const std::string& key) { return store_.check(key); });
    return {waiting_.empty() ? OperationState::kDone : OperationState::kInProgress, {}};
  }
  void abort() noexcept override {}

 private:
  KeyValueStore& store_;
  std::vector<std::string> waiting_;
};

}  // namespace

std::string format_duration(std::chrono::milliseconds duration) {
  const auto ms = duration.count();
  if (ms < 1000) return fmt::format("{} ms", ms);
  if (ms % 1000 == 0) return fmt::format("{} s", ms / 1000);
  return fmt::format("{:.1f} s", static_cast<double>(ms) / 1000.0);
}

void await_with_deadline(PendingOperation& operation, const Deadline& deadline,
                         const std::function<std::string()>& held_up_by, const std::function<void()>& looking) {
  const auto started = Clock::now();
  auto next_look = started + kLookEvery;
  for (std::chrono::nanoseconds pause = kFirstPoll;;
       pause = std::min<std::chrono::nanoseconds>(pause * 2, kLongestPoll)) {
    const auto status = operation.poll();
    if (status.state == OperationState::kDone) return;
    if (status.state == OperationState::kFailed) {
      // After an error NCCL's communicator is unusable until aborted.
      operation.abort();
      throw IoError(fmt::format("rank {}: {} failed: {}", deadline.rank, deadline.what, status.error));
    }
    const auto now = Clock::now();
    if (now - started >= deadline.timeout) {
      // Named before the abort: a rank that held it up is still as it was.
      const auto who = held_up_by ? held_up_by() : std::string("the other ranks did not take part");
      operation.abort();
      throw IoError(fmt::format("rank {}: {} did not finish within {}: {}. It was aborted, and this rank stops",
                                deadline.rank, deadline.what, format_duration(deadline.timeout), who));
    }
    if (looking && now >= next_look) {
      looking();
      next_look = Clock::now() + kLookEvery;
    }
    std::this_thread::sleep_for(pause);
  }
}

void await_keys(KeyValueStore& store, const std::vector<std::string>& keys, const Deadline& deadline,
                const std::function<std::string()>& held_up_by) {
  KeysArrival arrival(store, keys);
  await_with_deadline(arrival, deadline, held_up_by);
}

std::string held_up_message(const std::vector<bool>& came, const std::vector<int>& stopped,
                            const std::vector<std::string>& hosts) {
  std::vector<int> absent;
  for (std::size_t r = 0; r < came.size(); ++r) {
    if (!came[r]) absent.push_back(static_cast<int>(r));
  }
  std::vector<int> silent;
  for (const int r : stopped) {
    if (static_cast<std::size_t>(r) >= came.size() || came[static_cast<std::size_t>(r)]) silent.push_back(r);
  }
  std::sort(silent.begin(), silent.end());
  std::string text;
  if (!absent.empty()) {
    text = fmt::format("{} never came to it (failed, hung or stopped before it; see {} log)", name_ranks(absent, hosts),
                       absent.size() == 1 ? "its" : "their");
  }
  if (!silent.empty()) {
    if (!text.empty()) text += "; ";
    text += fmt::format("{} came to it but {} shown no sign of life since (hung, stopped or lost {} network)",
                        name_ranks(silent, hosts), silent.size() == 1 ? "has" : "have",
                        silent.size() == 1 ? "its" : "their");
  }
  if (text.empty()) {
    text =
        "every rank came to it and still shows signs of life, so the GPUs could not reach each other: set "
        "NCCL_SOCKET_IFNAME (and NCCL_IB_HCA on InfiniBand) to the network that connects the nodes, check for a "
        "firewall between them, and rerun with NCCL_DEBUG=INFO to see where NCCL stopped";
  }
  return text;
}

}  // namespace mgpr::runtime
