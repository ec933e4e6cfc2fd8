#pragma once
// One rank's whole run, in phases: prepare (inputs, model and outputs checked before
// anyone waits on anyone), join (journals read, rendezvous, stale journal removed),
// process (the tile loop, results gathered, outputs written) and report (the rank's
// summary file and rank 0's "GPU Usage Summary").
#include "app/run_plan.hpp"
#include "mgpr/env_names.hpp"

namespace mgpr::runtime {

// 0 when every tile is done and the outputs are written, kExitStopped when a stop
// request ended it early with the finished tiles journaled; throws on failure.
int run_rank(const RunPlan& plan, const RankEnvironment& ranks);

}  // namespace mgpr::runtime
