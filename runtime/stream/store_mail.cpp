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
  // What the writer took only grows: the store is asked only when what was last learnt
  // says the mailbox is full. A run that lost a rank ends here rather than wait for a
  // writer that stopped reading.
  while (sent_ - known_taken_ >= max_unread_) {
    known_taken_ = communicator_.add(taken_key, 0);
    if (sent_ - known_taken_ < max_unread_) break;
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
      taken_(static_cast<std::size_t>(communicator.world_size())) {
  // Every sender's count made now (an add of 0 makes a counter, and changes none a sender
  // made first), so that one request reads them all.
  for (int rank = 0; rank < communicator_.world_size(); ++rank) {
    if (rank == communicator_.rank()) continue;
    senders_.push_back(rank);
    sent_keys_.push_back(store_key(topic_, writer_, rank, "sent"));
    (void)communicator_.add(sent_keys_.back(), 0);
  }
}

void WriterMailbox::stop_reading(int rank) {
  for (std::size_t i = 0; i < senders_.size(); ++i) {
    if (senders_[i] != rank) continue;
    senders_.erase(senders_.begin() + static_cast<std::ptrdiff_t>(i));
    sent_keys_.erase(sent_keys_.begin() + static_cast<std::ptrdiff_t>(i));
    return;
  }
}

std::vector<std::string> WriterMailbox::receive() {
  std::vector<std::string> messages;
  const auto sent_counts = communicator_.counters(sent_keys_);
  for (std::size_t i = 0; i < senders_.size(); ++i) {
    const int rank = senders_[i];
    auto& taken = taken_[static_cast<std::size_t>(rank)];
    const auto sent = sent_counts[i];
    const auto first = taken;
    for (; taken < sent; ++taken) messages.push_back(communicator_.take(store_key(topic_, writer_, rank, taken)));
    if (taken > first) communicator_.add(store_key(topic_, writer_, rank, "taken"), taken - first);
  }
  return messages;
}

}  // namespace mgpr::runtime
