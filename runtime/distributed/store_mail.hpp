#pragma once
// Messages from every rank to rank 0 while the tiles still run, through the run's store:
// no collective, so each rank sends when it has something and never waits for a peer
// at the pace of another. A rank's messages are numbered: message n of rank r is the
// key <topic>/<r>/<n>, its count the counter <topic>/<r>/sent; rank 0 takes each
// (removing it from the store) and counts it in <topic>/<r>/taken. A sender keeps at
// most `max_unread` messages waiting, so the store, held by rank 0, stays small
// whatever the run's size.
#include <cstdint>
#include <string>
#include <vector>

#include "distributed/communicator.hpp"

namespace mgpr::runtime {

// On a rank other than 0.
class MailToRank0 {
 public:
  MailToRank0(Communicator& communicator, std::string topic, std::int64_t max_unread);
  // Waits while `max_unread` of this rank's messages are still unread, then sends.
  void send(const std::string& bytes);

 private:
  Communicator& communicator_;
  std::string topic_;
  std::int64_t max_unread_;
  std::int64_t sent_ = 0;
};

// On rank 0.
class Rank0Mailbox {
 public:
  Rank0Mailbox(Communicator& communicator, std::string topic);
  // Every message the other ranks sent since the last call, each rank's in its order;
  // never waits for more.
  std::vector<std::string> receive();

 private:
  Communicator& communicator_;
  std::string topic_;
  std::vector<std::int64_t> taken_;  // per rank
};

}  // namespace mgpr::runtime
