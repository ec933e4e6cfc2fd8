#include "distributed/store_mail.hpp"

#include <fmt/format.h>

#include <chrono>
#include <thread>

namespace mgpr::runtime {
namespace {

// How often a sender with too many unread messages looks again.
constexpr auto kUnreadPoll = std::chrono::milliseconds(10);

std::string message_key(const std::string& topic, int rank, std::int64_t number) {
  return fmt::format("{}/{}/{}", topic, rank, number);
}
std::string sent_key(const std::string& topic, int rank) { return fmt::format("{}/{}/sent", topic, rank); }
std::string taken_key(const std::string& topic, int rank) { return fmt::format("{}/{}/taken", topic, rank); }

}  // namespace

MailToRank0::MailToRank0(Communicator& communicator, std::string topic, std::int64_t max_unread)
    : communicator_(communicator), topic_(std::move(topic)), max_unread_(max_unread) {}

void MailToRank0::send(const std::string& bytes) {
  const auto rank = communicator_.rank();
  // A run that lost a rank ends here rather than wait for a rank 0 that stopped reading.
  while (sent_ - communicator_.add(taken_key(topic_, rank), 0) >= max_unread_) {
    communicator_.check_peers();
    std::this_thread::sleep_for(kUnreadPoll);
  }
  // The message first, then its count: rank 0 takes only what is counted.
  communicator_.put(message_key(topic_, rank, sent_), bytes);
  ++sent_;
  communicator_.add(sent_key(topic_, rank), 1);
}

Rank0Mailbox::Rank0Mailbox(Communicator& communicator, std::string topic)
    : communicator_(communicator),
      topic_(std::move(topic)),
      taken_(static_cast<std::size_t>(communicator.world_size())) {}

std::vector<std::string> Rank0Mailbox::receive() {
  std::vector<std::string> messages;
  for (int rank = 1; rank < communicator_.world_size(); ++rank) {
    auto& taken = taken_[static_cast<std::size_t>(rank)];
    const auto sent = communicator_.add(sent_key(topic_, rank), 0);
    const auto first = taken;
    for (; taken < sent; ++taken) messages.push_back(communicator_.take(message_key(topic_, rank, taken)));
    if (taken > first) communicator_.add(taken_key(topic_, rank), taken - first);
  }
  return messages;
}

}  // namespace mgpr::runtime
