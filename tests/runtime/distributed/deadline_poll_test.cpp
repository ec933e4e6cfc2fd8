// The deadline NCCL's collectives are polled to, with fake operations in place of NCCL:
// one that never ends is aborted once and named, one that ends late but in time is
// waited for, one that fails carries the library's text.
#include "distributed/deadline_poll.hpp"

#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include "distributed/collectives.hpp"
#include "mgpr/error.hpp"
#include "support/error_of.hpp"
#include "support/text_search.hpp"

namespace mgpr::runtime {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using test::contains;
using test::error_of;

// Done `after` its start, or failed with `error`, or never when `after` is empty.
class FakeOperation final : public PendingOperation {
 public:
  explicit FakeOperation(std::optional<milliseconds> after, std::string error = {})
      : after_(after), error_(std::move(error)) {}
  OperationStatus poll() override {
    ++polls;
    if (!error_.empty()) return {OperationState::kFailed, error_};
    if (after_ && Clock::now() - started_ >= *after_) return {OperationState::kDone, {}};
    return {};
  }
  void abort() noexcept override { ++aborts; }
  int polls = 0;
  int aborts = 0;

 private:
  Clock::time_point started_ = Clock::now();
  std::optional<milliseconds> after_;
  std::string error_;
};

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

TEST(DeadlinePoll, AnOperationThatNeverEndsIsAbortedOnceAndWhoHeldItUpIsNamed) {
  FakeOperation never(std::nullopt);
  const auto start = Clock::now();
  int asked = 0;
  const auto message = error_of<IoError>([&] {
    await_with_deadline(never, {0, "NCCL all_gather (collective 2)", milliseconds(300)}, [&] {
      ++asked;
      return held_up_message({true, false}, {}, {"gpu01", "gpu02"});
    });
  });
  EXPECT_EQ(never.aborts, 1);
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(message,
            "rank 0: NCCL all_gather (collective 2) did not finish within 300 ms: rank 1 on gpu02 never came to it "
            "(failed, hung or stopped before it; see its log). It was aborted, and this rank stops");
  EXPECT_GE(seconds_since(start), 0.3);
  EXPECT_LT(seconds_since(start), 2.0);
}

TEST(DeadlinePoll, AnOperationEndingLateButWithinTheDeadlineIsWaitedFor) {
  FakeOperation late(milliseconds(200));
  const auto start = Clock::now();
  await_with_deadline(late, {1, "NCCL barrier (collective 1)", milliseconds(2000)}, [] { return std::string("x"); });
  EXPECT_EQ(late.aborts, 0);
  EXPECT_GE(seconds_since(start), 0.2);
  EXPECT_LT(seconds_since(start), 1.5);
  EXPECT_GT(late.polls, 1);
}

TEST(DeadlinePoll, AFailedOperationIsAbortedWithTheLibrarysText) {
  FakeOperation failing(std::nullopt, "remote process exited or there was a network error: NET/Socket : peer gone");
  const auto message = error_of<IoError>([&] {
    await_with_deadline(failing, {3, "NCCL communicator creation", milliseconds(5000)}, {});
  });
  EXPECT_EQ(failing.aborts, 1);
  EXPECT_EQ(message,
            "rank 3: NCCL communicator creation failed: remote process exited or there was a network error: "
            "NET/Socket : peer gone");
}

TEST(DeadlinePoll, PeersAreLookedAtWhileAnOperationIsOverdue) {
  FakeOperation late(milliseconds(2300));
  int looks = 0;
  await_with_deadline(late, {0, "NCCL barrier", milliseconds(10000)}, {}, [&] { ++looks; });
  EXPECT_GE(looks, 1);
  EXPECT_LE(looks, 3);
}

TEST(DeadlinePoll, ARankWhoseBeatStoppedIsNamedApartFromThoseThatNeverCame) {
  EXPECT_EQ(held_up_message({true, true, false, true}, {1, 3}, {"a", "b", "c", "d"}),
            "rank 2 on c never came to it (failed, hung or stopped before it; see its log); rank 1 on b, rank 3 on d "
            "came to it but have shown no sign of life since (hung, stopped or lost their network)");
  // Without hosts, and many ranks: ranges.
  std::vector<bool> came(20, false);
  came[0] = true;
  EXPECT_TRUE(contains(held_up_message(came, {}, {}), "ranks 1-19 never came to it")) << held_up_message(came, {}, {});
}

TEST(DeadlinePoll, WhenEveryRankCameAndBeatsTheNetworkIsBlamed) {
  const auto text = held_up_message({true, true}, {}, {"a", "b"});
  EXPECT_TRUE(contains(text, "every rank came to it and still shows signs of life")) << text;
  EXPECT_TRUE(contains(text, "NCCL_SOCKET_IFNAME")) << text;
}

class MapStore final : public KeyValueStore {
 public:
  void set(const std::string& key, const std::string& value) override {
    const std::lock_guard lock(mutex_);
    values_[key] = value;
  }
  std::string get(const std::string& key) override {
    const std::lock_guard lock(mutex_);
    return values_.at(key);
  }
  bool check(const std::string& key) override {
    const std::lock_guard lock(mutex_);
    return values_.contains(key);
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::string> values_;
};

TEST(DeadlinePoll, KeysThatNeverComeNameTheirRanks) {
  MapStore store;
  store.set("v/0", "1");
  const std::vector<std::string> keys{"v/0", "v/1", "v/2"};
  const auto message = error_of<IoError>([&] {
    await_keys(store, keys, {0, "the NCCL set-up", milliseconds(200)}, [&] {
      std::vector<bool> came;
      for (const auto& key : keys) came.push_back(store.check(key));
      return held_up_message(came, {}, {});
    });
  });
  EXPECT_TRUE(contains(message, "rank 0: the NCCL set-up did not finish within 200 ms: ranks 1-2 never came to it"))
      << message;
}

TEST(DeadlinePoll, KeysSetWhileWaitingEndTheWait) {
  MapStore store;
  std::thread later([&] {
    std::this_thread::sleep_for(milliseconds(100));
    store.set("v/1", "");
  });
  await_keys(store, {"v/1"}, {0, "the NCCL set-up", milliseconds(5000)}, {});
  later.join();
}

TEST(DeadlinePoll, DurationsReadAsPeopleWriteThem) {
  EXPECT_EQ(format_duration(milliseconds(300000)), "300 s");
  EXPECT_EQ(format_duration(milliseconds(1500)), "1.5 s");
  EXPECT_EQ(format_duration(milliseconds(200)), "200 ms");
}

}  // namespace
}  // namespace mgpr::runtime
