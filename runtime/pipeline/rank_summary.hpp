#pragma once
// The rank's summary file (docs/contracts.md): what mgpr-logs reads after the job.
#include <string>
#include <vector>

#include "mgpr/env_names.hpp"
#include "mgpr/summary.hpp"
#include "model/device_memory.hpp"
#include "pipeline/pipeline.hpp"

namespace mgpr::runtime {

// Who ran (job, step, rank, host, device); the figures come later.
RankSummary base_summary(const RankEnvironment& ranks, const DeviceChoice& device);
void fill_from_stats(RankSummary& summary, const PipelineStats& stats);
// What the labels mean and which model ran, for the job's report: the run's class names
// (index = label value) and its model card in one line (ModelCard::summary(); empty
// when the model has none).
void describe_model(RankSummary& summary, const std::vector<std::string>& class_names, std::string model_card);
// Seconds since the epoch, this host's clock: RankSummary::started_unix_s.
double unix_now();
// A rank that failed inside its tile loop: its timeline ends where it failed, with the
// last figures it had, so the report draws the failure at the moment it happened.
void mark_end_of_timeline(RankSummary& summary);
// Into the job's log folder; a plain local run (no Slurm job, no MGPR_LOG_DIR) keeps none.
// Takes the process's peak resident memory first (host_peak_bytes; on CPU also the
// peak's figure), so the merge and writers after the loop count.
void write_rank_summary(RankSummary& summary);

}  // namespace mgpr::runtime
