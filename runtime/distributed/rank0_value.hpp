#pragma once
// A value every rank of a run must hold alike, made once by rank 0 and read by the others
// from the run's store: the inputs expanded (folders listed, list files read, globs
// matched) once per run, so no rank lists for itself and no two ranks can see different
// listings of a folder or a bucket that changes while they start. No c10d header: the
// tests drive it with a store in memory; communicator.hpp's share_from_rank0 runs it on
// the run's TCPStore.
#include <chrono>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "distributed/collectives.hpp"

namespace mgpr::runtime {

// Rank 0 calls `make` and stores its bytes under `key`; when `make` throws UsageError the
// message is stored instead, and every rank throws it (rank 0 after the others read it,
// or after `linger`). The other ranks never call `make`: they read `key` (KeyValueStore's
// get waits for it, up to the store's timeout) and return rank 0's bytes.
std::string value_of_rank0(KeyValueStore& store, int rank, int world_size, const std::string& key,
                           const std::function<std::string()>& make,
                           std::chrono::milliseconds linger = std::chrono::seconds(10));

// A list of strings with no NUL in them (paths, URLs) as one value, and back.
std::string join_with_nuls(std::span<const std::string> items);
std::vector<std::string> split_at_nuls(std::string_view joined);

}  // namespace mgpr::runtime
