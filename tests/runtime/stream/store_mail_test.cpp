// Messages from the ranks to a writer through the run's store, while tiles run: each
// rank's arrive in its order, whole, are removed from the store once taken, and a
// sender waits rather than fill the store when the writer reads slower than it sends.
#include "stream/store_mail.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using mgpr::StoreKey;
using mgpr::runtime::Communicator;
using mgpr::runtime::MailToWriter;
using mgpr::runtime::WriterMailbox;

// The store of one run, shared by ranks that are threads of this test.
struct SharedStore {
  std::mutex mutex;
  std::map<std::string, std::int64_t> counters;
  std::map<std::string, std::string> values;
};

// A rank's view of the store; the mail needs no collective.
class StoreRank final : public Communicator {
 public:
  StoreRank(SharedStore& store, int rank, int world_size) : store_(store), rank_(rank), world_size_(world_size) {}
  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int world_size() const override { return world_size_; }
  void barrier() override { throw std::logic_error("no collective here"); }
  std::vector<std::string> all_gather(const std::string& /*bytes*/) override {
    throw std::logic_error("no collective here");
  }
  std::int64_t add(const std::string& key, std::int64_t delta) override {
    const std::lock_guard lock(store_.mutex);
    return store_.counters[key] += delta;
  }
  void put(const std::string& key, const std::string& bytes) override {
    const std::lock_guard lock(store_.mutex);
    store_.values[key] = bytes;
  }
  std::string take(const std::string& key) override {
    const std::lock_guard lock(store_.mutex);
    auto value = store_.values.at(key);
    store_.values.erase(key);
    return value;
  }
  std::optional<std::string> take_if_set(const std::string& key) override {
    const std::lock_guard lock(store_.mutex);
    const auto found = store_.values.find(key);
    if (found == store_.values.end()) return std::nullopt;
    auto value = found->second;
    store_.values.erase(found);
    return value;
  }

 private:
  SharedStore& store_;
  int rank_;
  int world_size_;
};

TEST(StoreMail, EachRanksMessagesArriveInOrderAndLeaveTheStore) {
  SharedStore store;
  StoreRank rank0(store, 0, 3);
  StoreRank rank1(store, 1, 3);
  StoreRank rank2(store, 2, 3);
  MailToWriter from1(rank1, StoreKey::kResultMail, 0, 100);
  MailToWriter from2(rank2, StoreKey::kResultMail, 0, 100);
  WriterMailbox box(rank0, StoreKey::kResultMail, 0);
  EXPECT_TRUE(box.receive().empty());
  from1.send("a1");
  from2.send("b1");
  from1.send(std::string("a2\n\0with a zero", 15));
  EXPECT_EQ(store.values.size(), 3U);
  const auto first = box.receive();
  ASSERT_EQ(first.size(), 3U);
  EXPECT_EQ(first[0], "a1");
  EXPECT_EQ(first[1], std::string("a2\n\0with a zero", 15));
  EXPECT_EQ(first[2], "b1");
  EXPECT_TRUE(store.values.empty());
  EXPECT_TRUE(box.receive().empty());
  from2.send("b2");
  EXPECT_EQ(box.receive(), std::vector<std::string>{"b2"});
}

// A writer on another rank than 0, beside rank 0's: each receives only its own mail,
// from every rank but itself, and the two never see each other's messages.
TEST(StoreMail, EachWriterReceivesOnlyItsOwnMailFromEveryOtherRank) {
  SharedStore store;
  StoreRank rank0(store, 0, 3);
  StoreRank rank1(store, 1, 3);
  StoreRank rank2(store, 2, 3);
  MailToWriter to1_from0(rank0, StoreKey::kResultMail, 1, 10);
  MailToWriter to1_from2(rank2, StoreKey::kResultMail, 1, 10);
  MailToWriter to0_from2(rank2, StoreKey::kResultMail, 0, 10);
  WriterMailbox writer1(rank1, StoreKey::kResultMail, 1);
  WriterMailbox writer0(rank0, StoreKey::kResultMail, 0);
  to1_from0.send("0 to 1");
  to1_from2.send("2 to 1");
  to0_from2.send("2 to 0");
  EXPECT_EQ(writer1.receive(), (std::vector<std::string>{"0 to 1", "2 to 1"}));
  EXPECT_EQ(writer0.receive(), std::vector<std::string>{"2 to 0"});
  EXPECT_TRUE(store.values.empty());
}

// Rank 0 reads nothing for a while: the sender stops at `max_unread` messages on the
// store, then goes on as rank 0 takes them; none is lost or reordered.
TEST(StoreMail, ASenderWaitsWhileTheWriterHasTooManyUnread) {
  SharedStore store;
  StoreRank rank0(store, 0, 2);
  StoreRank rank1(store, 1, 2);
  constexpr int kMessages = 50;
  constexpr std::int64_t kMaxUnread = 4;
  std::atomic<int> sent{0};
  std::thread sender([&] {
    MailToWriter mail(rank1, StoreKey::kResultMail, 0, kMaxUnread);
    for (int i = 0; i < kMessages; ++i) {
      mail.send(std::to_string(i));
      ++sent;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(sent.load(), kMaxUnread);
  {
    const std::lock_guard lock(store.mutex);
    EXPECT_EQ(store.values.size(), static_cast<std::size_t>(kMaxUnread));
  }
  WriterMailbox box(rank0, StoreKey::kResultMail, 0);
  std::vector<std::string> received;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (received.size() < kMessages && std::chrono::steady_clock::now() < deadline) {
    for (auto& message : box.receive()) received.push_back(std::move(message));
  }
  sender.join();
  ASSERT_EQ(received.size(), static_cast<std::size_t>(kMessages));
  for (int i = 0; i < kMessages; ++i) EXPECT_EQ(received[static_cast<std::size_t>(i)], std::to_string(i));
  EXPECT_TRUE(store.values.empty());
}

}  // namespace
