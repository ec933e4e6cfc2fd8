#pragma once
// The environment srun --mgpr gives rank `rank` of `world` on this host, for the tests
// that start mgpr-comm-rank processes themselves.
#include <map>
#include <string>

namespace mgpr::test {

inline std::map<std::string, std::string> rank_env(int rank, int world, int port) {
  return {{"RANK", std::to_string(rank)},
          {"WORLD_SIZE", std::to_string(world)},
          {"MASTER_ADDR", "127.0.0.1"},
          {"MASTER_PORT", std::to_string(port)}};
}

}  // namespace mgpr::test
