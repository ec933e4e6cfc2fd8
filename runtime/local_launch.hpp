#pragma once
// `mgpr gpus=N` outside Slurm and outside any launcher: start N ranks of this same
// program on this machine (one per GPU, or N CPU ranks), the way the original project
// "just worked" on a multi-GPU workstation.
#include <string>
#include <vector>

namespace mgpr::runtime {

// Re-executes /proc/self/exe `ranks` times with RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1 and a free MASTER_PORT (and one
// CUDA_VISIBLE_DEVICES each when `one_gpu_each`), forwarding `arguments`. When a rank
// fails, the others are stopped. Returns the first non-zero exit status, else 0.
int run_local_ranks(int ranks, bool one_gpu_each, const std::vector<std::string>& arguments);

}  // namespace mgpr::runtime
