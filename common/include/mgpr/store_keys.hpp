#pragma once
// Every key of a run's store (rank 0's c10d TCPStore, which every rank of the run talks
// to), in one table: what each holds, who writes it and its shape. Every user of the
// store takes its keys from here (tests/unit/structure_check.sh fails on a key spelled
// anywhere else), so two stages can never pick the same key for different things, and
// a reader of the store's traffic finds every key's meaning in one place.
//
// A key is its name, or its name and parts joined with '/': `arrived/3` is the row
// kArrivedHost with the part 3. No name is another's name followed by '/', so a key
// with parts never equals another row's key.
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace mgpr {

enum class StoreKey {
  // The rendezvous (distributed/communicator_c10d.cpp).
  kArrivedCount,
  kArrivedHost,
  kRendezvousVerdict,
  kVerdictRead,
  kRendezvousRefused,
  kRanksLeft,
  // One GPU, one rank (distributed/communicator_c10d.cpp).
  kRank0ClaimedGpu,
  kGpuClaims,
  kGpuClaimant,
  // Values rank 0 makes once for every rank (app/run_plan.cpp).
  kFrozenInputs,
  kJournalSettings,
  // The NCCL set-up and each collective's arrivals (distributed/communicator_nccl.cpp).
  kNcclSetup,
  kNcclVersion,
  kNcclStep,
  // The peer watch (distributed/peer_watch.cpp).
  kPeerLinePort,
  kPeerLost,
  kPeerVerdict,
  kPeerBeat,
  kCollectiveCount,
  kCollectiveArrival,
  kLiveGather,
  // Gloo's own keys, all under this prefix (distributed/gloo_collectives.cpp).
  kGlooPrefix,
  // The tile loop (app/tile_loop.cpp).
  kNextTile,
  kTilesDone,
  kLeaseLedger,
  kRankFinished,
  kHandedTiles,
  // Results on their way to a writer while tiles run (stream/).
  kResultMail,
  kFailureMail,
  kTilesWritten,
};

struct StoreKeyRow {
  StoreKey key;
  std::string_view name;
  // The parts after the name, each in <>: "" for a key that is its name alone.
  std::string_view parts;
  std::string_view holds;
};

inline constexpr std::array kStoreKeys{
    StoreKeyRow{StoreKey::kArrivedCount, "rendezvous/arrived", "", "ranks that reached the rendezvous (counter)"},
    StoreKeyRow{StoreKey::kArrivedHost, "arrived", "<rank>", "the host a rank arrived from"},
    StoreKeyRow{StoreKey::kRendezvousVerdict, "rendezvous/verdict", "", "rank 0's verdict: ok, or why the run fails"},
    StoreKeyRow{StoreKey::kVerdictRead, "rendezvous/verdict_read", "", "ranks that read the verdict (counter)"},
    StoreKeyRow{StoreKey::kRendezvousRefused, "rendezvous/refused", "", "why a rank refused the run before it"},
    StoreKeyRow{StoreKey::kRanksLeft, "rendezvous/left", "", "ranks that left the run (counter)"},
    StoreKeyRow{StoreKey::kRank0ClaimedGpu, "gpu/rank0-claimed", "", "rank 0 claimed its GPU first"},
    StoreKeyRow{StoreKey::kGpuClaims, "gpu/claims", "<uuid>", "ranks that claimed this GPU (counter)"},
    StoreKeyRow{StoreKey::kGpuClaimant, "gpu/claimant", "<uuid>/<claim>", "the rank and host of a claim"},
    StoreKeyRow{StoreKey::kFrozenInputs, "inputs/rasters", "", "the run's rasters, listed once by rank 0"},
    StoreKeyRow{StoreKey::kJournalSettings, "journal/settings", "", "the settings record of the run's journal"},
    StoreKeyRow{StoreKey::kNcclSetup, "nccl/setup", "", "rank 0's NCCL unique id, or why NCCL was refused"},
    StoreKeyRow{StoreKey::kNcclVersion, "nccl/version", "<rank>", "the NCCL version a rank linked"},
    StoreKeyRow{StoreKey::kNcclStep, "nccl/step", "<step>/<rank>", "a rank reached this NCCL step"},
    StoreKeyRow{StoreKey::kPeerLinePort, "peers/line-port", "", "the port of rank 0's peer lines"},
    StoreKeyRow{StoreKey::kPeerLost, "peers/lost", "", "why the run lost a rank, as rank 0 learnt it"},
    StoreKeyRow{StoreKey::kPeerVerdict, "peers/verdict", "<rank>",
                "rank 0 went on without this rank (on_rank_loss=continue), and why"},
    StoreKeyRow{StoreKey::kPeerBeat, "beat", "<rank>", "a rank's heartbeat (counter)"},
    StoreKeyRow{StoreKey::kCollectiveCount, "collective/count", "<collective>", "ranks in the collective (counter)"},
    StoreKeyRow{StoreKey::kCollectiveArrival, "collective/arrived", "<collective>/<rank>",
                "a rank entered the collective"},
    StoreKeyRow{StoreKey::kLiveGather, "live", "<collective>/<rank, all or count>",
                "a collective among the ranks alive (on_rank_loss=continue): a rank's bytes, rank 0's of them all, "
                "and how many ranks put theirs (counter)"},
    StoreKeyRow{StoreKey::kGlooPrefix, "gloo", "<gloo's key>", "Gloo's own rendezvous"},
    StoreKeyRow{StoreKey::kNextTile, "tiles/next", "",
                "the next tile to hand out (counter; its high bits count the tiles handed again)"},
    StoreKeyRow{StoreKey::kTilesDone, "tiles/done", "", "tiles every rank finished, for the progress line (counter)"},
    StoreKeyRow{StoreKey::kLeaseLedger, "tiles/leases", "<rank>",
                "the leases a rank holds unfinished (distributed/lease_book.hpp)"},
    StoreKeyRow{StoreKey::kRankFinished, "tiles/finished", "<rank>",
                "a rank's loop ended and its results were sent (on_rank_loss=continue; counter)"},
    StoreKeyRow{StoreKey::kHandedTiles, "tiles/handed", "<rank>",
                "a lost rank's tile rank 0 hands to a live rank to do again (on_rank_loss=continue)"},
    StoreKeyRow{StoreKey::kResultMail, "stream/results", "<writer>/<sender>/<number, sent or taken>",
                "a batch of results on its way to a writer, and the mail's counters"},
    StoreKeyRow{StoreKey::kFailureMail, "stream/raster-failures", "<writer>/<sender>/<number, sent or taken>",
                "a raster a rank could not read, for its writer, and the mail's counters"},
    StoreKeyRow{StoreKey::kTilesWritten, "stream/tiles-written", "<writer>",
                "tiles whose rows the writer wrote, in the run's order (counter)"},
};

const StoreKeyRow& store_key_row(StoreKey key);

// The row a key on the store belongs to: its name alone, or its name and parts; nullopt
// for a key of no row (counting a rank's requests by row, distributed/store_traffic.hpp).
std::optional<StoreKey> store_key_of(std::string_view key);

// The key of a row that has no parts.
std::string store_key(StoreKey key);

// The key of a row with parts, each formatted with fmt and joined with '/'; the count
// must be the row's (a std::logic_error otherwise).
template <class... Parts>
std::string store_key(StoreKey key, const Parts&... parts);

namespace detail {
std::string store_key_with(StoreKey key, std::size_t part_count, std::string joined_parts);
}

template <class... Parts>
std::string store_key(StoreKey key, const Parts&... parts) {
  static_assert(sizeof...(Parts) > 0);
  std::string joined;
  ((joined += fmt::format("/{}", parts)), ...);
  return detail::store_key_with(key, sizeof...(Parts), std::move(joined));
}

}  // namespace mgpr
