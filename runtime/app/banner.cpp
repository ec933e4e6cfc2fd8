#include "app/banner.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join, there since fmt 11

#include <cstdio>

#include "mgpr/input_list.hpp"
#include "mgpr/process.hpp"
#include "mgpr/version.hpp"
#include "source/raster_report.hpp"

namespace mgpr::runtime {

void print_banner(const RankEnvironment& ranks, const RunPlan& plan, const BannerFacts& facts) {
  const auto& device = plan.device;
  fmt::print("# mgpr {} | rank {:>3}/{} | local {} | host {} | device {} | threads {} | libtorch {} | gdal {}\n",
             kVersion, ranks.rank, ranks.world_size, ranks.local_rank, host_name(""), device.name,
             facts.backend.threads, facts.backend.torch_version, facts.backend.gdal_version);
  if (ranks.rank == 0) {
    print_rasters(facts.source.rasters());
    fmt::print("#   {} tiles of {} px, model {}\n", facts.source.tiles().size(), facts.source.tile_size(),
               facts.model.description());
    if (!plan.model_card.empty()) fmt::print("#   model card: {}\n", plan.model_card);
    if (const auto& crops = plan.crop_classifier) {
      fmt::print("#   every box classified by {}: crops of {} px{} in batches of {}, {}\n", crops->model.model,
                 crops->model.tile_size, crops->margin > 0 ? fmt::format(" with a margin of {} px", crops->margin) : "",
                 crops->batch_size,
                 crops->class_names.empty() ? "classes unnamed"
                                            : fmt::format("classes {}", fmt::join(crops->class_names, ", ")));
    }
  }
  std::fflush(stdout);
}

}  // namespace mgpr::runtime
