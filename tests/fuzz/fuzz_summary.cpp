// A rank's summary JSON, as mgpr-logs reads it back from a job's log folder (where any
// program of the job's user may have written anything).
#include "fuzz_input.hpp"
#include "mgpr/summary.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = mgpr::fuzz::as_text(data, size);
  mgpr::fuzz::refusing_is_fine([&] {
    const auto summary = mgpr::rank_summary_from_json(text, "rank-00000.json");
    const auto written = mgpr::to_json_text(summary);
    static_cast<void>(mgpr::rank_summary_from_json(written, "written"));
    const std::vector<mgpr::RankSummary> ranks{summary, summary};
    static_cast<void>(mgpr::total(ranks));
  });
  return 0;
}
