#pragma once
// `mgpr gpus=N` outside Slurm and outside any launcher: start N ranks of this same
// program on this machine (one per GPU, or N CPU ranks), the way the original project
// "just worked" on a multi-GPU workstation.
#include <string>
#include <vector>

namespace mgpr::runtime {

// Re-executes /proc/self/exe `ranks` times with RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, NODE_RANK=0, GROUP_RANK=0, MASTER_ADDR=127.0.0.1 and a free
// MASTER_PORT (and, when `one_gpu_each`, CUDA_VISIBLE_DEVICES = the i-th entry of this
// process's own list, or i when it has none), passing `arguments` as argv[1...] (the
// program name is not part of them). When a rank exits non-zero or dies by a signal,
// the others get SIGTERM, then SIGKILL after a grace period. SIGINT, SIGTERM, SIGHUP
// and SIGUSR2 (the walltime stop) sent to this process are passed on, and the ranks
// follow it (follow_local_launcher) should it die without passing anything on. Returns the first failure's status (128
// + signal for a signal), else 0. Call it before starting threads: it takes those signals by blocking them in the
// calling thread. Throws UsageError when `one_gpu_each` asks for more GPUs than CUDA_VISIBLE_DEVICES lists.
// `survive_rank_loss` (on_rank_loss=continue): a rank other than rank 0 that fails (not
// a usage error, the same on every rank) is named and the others go on; the launcher
// then ends with rank 0's code.
int run_local_ranks(int ranks, bool one_gpu_each, const std::vector<std::string>& arguments,
                    bool survive_rank_loss = false);

// Refuses (UsageError) a CUDA_VISIBLE_DEVICES value `visible` whose first `ranks`
// entries name one GPU twice ("0,0"): run_local_ranks would give two ranks one GPU,
// which NCCL refuses, and CUDA itself shows no GPU at all for such a list, so without
// this the ranks would only say that none is visible.
void refuse_shared_gpus(int ranks, const std::string& visible);

// In a rank run_local_ranks started (MGPR_LAUNCHER_PID names the launcher): asks the
// kernel for SIGTERM when the launcher dies, even by SIGKILL, so no rank runs on
// orphaned and writes outputs after its caller saw a failure; if the launcher is
// already gone, the SIGTERM comes at once. Elsewhere it does nothing.
void follow_local_launcher();

}  // namespace mgpr::runtime
