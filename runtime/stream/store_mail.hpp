#pragma once
// Messages from every rank to a writer while the tiles still run, through the run's
// store: no collective, so each rank sends when it has something and never waits for a
// peer at the pace of another. A rank's messages to writer w on a topic (a row of
// mgpr/store_keys.hpp) are numbered: message n of rank r is the key <topic>/<w>/<r>/<n>,
// its count the counter <topic>/<w>/<r>/sent; the writer takes each (removing it from
// the store) and counts it in <topic>/<w>/<r>/taken. A sender keeps at most
// `max_unread` messages waiting, so the store, held by rank 0, stays small whatever the
// run's size.
#include <cstdint>
#include <string>
#include <vector>

#include "distributed/communicator.hpp"
#include "mgpr/store_keys.hpp"

namespace mgpr::runtime {

// On a rank that sends to writer `writer` (whose rank is not the sender's).
class MailToWriter {
 public:
  MailToWriter(Communicator& communicator, StoreKey topic, int writer, std::int64_t max_unread);
  // Waits while `max_unread` of this rank's messages are still unread, then sends.
  void send(const std::string& bytes);

 private:
  Communicator& communicator_;
  StoreKey topic_;
  int writer_;
  std::int64_t max_unread_;
  std::int64_t sent_ = 0;
  std::int64_t known_taken_ = 0;  // the writer's count as last read
};

// On the writer's rank: the mail of every other rank.
class WriterMailbox {
 public:
  WriterMailbox(Communicator& communicator, StoreKey topic, int writer);
  // Every message the other ranks sent since the last call, each rank's in its order;
  // never waits for more.
  std::vector<std::string> receive();
  // A rank the run lost: what it sends from now on is never read (fencing).
  void stop_reading(int rank);

 private:
  Communicator& communicator_;
  StoreKey topic_;
  int writer_;
  std::vector<std::int64_t> taken_;     // per rank
  std::vector<int> senders_;            // every rank but the writer's
  std::vector<std::string> sent_keys_;  // their count of messages sent, in that order
};

}  // namespace mgpr::runtime
