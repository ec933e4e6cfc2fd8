#pragma once
// The geometry rule: with --mgpr-bind=gpu a node runs exactly one task per GPU Slurm
// gave the step there. Any other shape leaves a distributed program waiting forever for
// ranks that never start (fewer tasks than GPUs) or puts ranks on the same GPU (more).
#include <cstdint>
#include <optional>
#include <string>

#include "step_settings.hpp"

namespace mgpr::spank {

// One node's share of a step, as slurmstepd sees it in user_init.
struct NodeShape {
  std::uint32_t job_id = 0;
  std::uint32_t step_id = 0;
  std::string host;
  int local_tasks = 0;
  int gpus = 0;  // GPUs Slurm bound to the step on this node
};

enum class Verdict { kRun, kWarn, kRefuse };

struct GeometryFinding {
  Verdict verdict = Verdict::kRun;
  std::string message;  // one line for the user; empty when kRun
};

// kRefuse in strict mode, kWarn with strict=0; --mgpr-bind=none checks nothing.
GeometryFinding check_geometry(const NodeShape& shape, Bind bind, bool strict);

// How many GPUs the step has on this node: the entries of SLURM_STEP_GPUS, which only
// Slurm sets (a CUDA_VISIBLE_DEVICES inherited from the user's shell proves nothing).
int count_step_gpus(const std::optional<std::string>& slurm_step_gpus);

}  // namespace mgpr::spank
