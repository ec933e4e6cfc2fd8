#pragma once
// Under on_rank_loss=continue a collective goes through the run's store among the ranks
// alive, rank 0 deciding which: a Gloo or NCCL group with a dead member would wait on it
// or fail. Every rank puts its bytes under live/<n>/<rank>; rank 0 reads those of every
// rank it has not found lost (its peer watch names a rank lost while it waits) and puts
// them all under live/<n>/all, which the others read. Small and rare: the run's end (its
// outcome and summaries), never the tiles.
#include <optional>
#include <string>
#include <vector>

#include "distributed/peer_watch.hpp"

namespace mgpr::runtime {

struct LiveCollective {
  int rank = 0;
  int world_size = 1;
  int number = 0;  // counts this rank's collectives: every rank makes the same ones
};

// Every rank's bytes by rank, empty for a rank lost. Throws what peers.check() throws
// (rank 0 lost, the run cannot go on).
std::vector<std::string> gather_among_live(PeerStore& store, const PeerWatch& peers, LiveCollective where,
                                           const std::string& bytes);

// Rank 0's "all": for each rank whether it came, its size, then its bytes.
std::string encode_gathered(const std::vector<std::optional<std::string>>& by_rank);
std::vector<std::string> decode_gathered(const std::string& text, int world_size);

}  // namespace mgpr::runtime
