#include "stream/store_mail.hpp"

#include <chrono>
#include <thread>

namespace mgpr::runtime {
namespace {

// How often a sender with too many unread messages looks again.
constexpr auto kUnreadPoll = std::chrono::milliseconds(10);

}  // namespace

MailToWriter::MailToWriter(Communicator& communicator, StoreKey topic, int writer, std::int64_t max_unread)
    : communicator_(communicator), topic_(topic), writer_(writer), max_unread_(max_unread) {}

void MailToWriter::send(const std::string& bytes) {
  const auto rank = communicator_.rank();
  const auto taken_key = store_key(topic_, writer_, rank, "taken");
  // A run that lost a rank ends here rather than wait for a writer that stopped reading.
  while (sent_ - communicator_.add(taken_key, 0) >= max_unread_) {
    communicator_.check_peers();
    std::this_thread::sleep_for(kUnreadPoll);
  }
  // The message first, then its count: the writer takes only what is counted.
  communicator_.put(store_key(topic_, writer_, rank, sent_), bytes);
  ++sent_;
  communicator_.add(store_key(topic_, writer_, rank, "sent"), 1);
}

WriterMailbox::WriterMailbox(Communicator& communicator, StoreKey topic, int writer)
    : communicator_(communicator),
      topic_(topic),
      writer_(writer),
      taken_(static_cast<std::size_t>(communicator.world_size())) {}

std::vector<std::string> WriterMailbox::receive() {
  std::vector<std::string> messages;
  for (int rank = 0; rank < communicator_.world_size(); ++rank) {
    if (rank == communicator_.rank()) continue;
    auto& taken = taken_[static_cast<std::size_t>(rank)];
    const auto sent = communicator_.add(store_key(topic_, writer_, rank, "sent"), 0);
    const auto first = taken;
    for (; taken < sent; ++taken) messages.push_back(communicator_.take(store_key(topic_, writer_, rank, taken)));
    if (taken > first) communicator_.add(store_key(topic_, writer_, rank, "taken"), taken - first);
  }
  return messages;
}

}  // namespace mgpr::runtime
