#include "geometry.hpp"

#include <fmt/format.h>

#include "mgpr/text.hpp"
#include "task_environment.hpp"

namespace mgpr::spank {
namespace {

std::string plural(int count, const char* one, const char* many) {
  return fmt::format("{} {}", count, count == 1 ? one : many);
}

std::string no_gpu_message(const NodeShape& shape) {
  return fmt::format(
      "step {}.{} on {} has no GPU, but --mgpr-bind=gpu (the default) gives every rank one; request GPUs "
      "(e.g. --gpus-per-node=<n> --ntasks-per-node=<n>), or use --mgpr-bind=none for CPU runs",
      shape.job_id, shape.step_id, shape.host);
}

std::string mismatch_message(const NodeShape& shape) {
  const std::string consequence = shape.local_tasks < shape.gpus
                                      ? "ranks would wait forever for peers that never start and GPUs would sit idle"
                                      : "ranks would share GPUs";
  return fmt::format(
      "step {}.{} on {} runs {} per node but has {} per node; mgpr needs one task per GPU ({}). Fix: "
      "srun --ntasks-per-node={}, or submit with mgpr-submit, which sets both",
      shape.job_id, shape.step_id, shape.host, plural(shape.local_tasks, "task", "tasks"),
      plural(shape.gpus, "GPU", "GPUs"), consequence, shape.gpus);
}

}  // namespace

GeometryFinding check_geometry(const NodeShape& shape, Bind bind, bool strict) {
  if (bind == Bind::kNone) return {};
  std::string message;
  if (shape.gpus == 0) {
    message = no_gpu_message(shape);
  } else if (shape.local_tasks != shape.gpus) {
    message = mismatch_message(shape);
  } else {
    return {};
  }
  if (strict) return {Verdict::kRefuse, "refused: " + message};
  return {Verdict::kWarn, "warning (strict=0, the step runs anyway): " + message};
}

int count_step_gpus(const std::optional<std::string>& slurm_step_gpus) {
  if (!slurm_step_gpus) return 0;
  return static_cast<int>(split_list(*slurm_step_gpus).size());
}

}  // namespace mgpr::spank
