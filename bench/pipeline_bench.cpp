// End-to-end tiles/s against model-only tiles/s on the same tiles, in one run: the ratio
// says how much of the reading the pipeline hides behind compute (goal: >= 0.95 on CPU).
// Not a test; bench/run-cpu-benchmarks records its output in docs/benchmarks.md.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cmath>

#include "backend_info.hpp"
#include "mgpr/config.hpp"
#include "mgpr/error.hpp"
#include "model.hpp"
#include "pipeline.hpp"
#include "reader_pool.hpp"
#include "tile_feed.hpp"
#include "tile_source.hpp"

namespace {

namespace rt = mgpr::runtime;
using Clock = std::chrono::steady_clock;

class DiscardOutputs final : public rt::BatchConsumer {
 public:
  void consume(std::span<const rt::TileData>, const torch::IValue&) override {}
};

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> arguments;
  int repeats = 1;
  CLI::App app{"mgpr-bench-pipeline: end-to-end against model-only tiles/s on the same tiles"};
  app.add_option("arguments", arguments, "RASTER paths and key=value overrides, as for mgpr")->required();
  app.add_option("--repeats", repeats, "passes over the tiles for each measure");
  CLI11_PARSE(app, argc, argv);
  try {
    auto config = mgpr::resolve_config({}, arguments);
    config.accelerator = "cpu";
    const auto backend = rt::configure_backend(config.threads > 0 ? config.threads : 1);
    const auto device = rt::choose_device(config, 0);
    const auto source = rt::make_tile_source(config);
    rt::TileModel model(config, device, source->channels());
    const auto& tiles = source->tiles();
    const auto tile_count = static_cast<std::int64_t>(tiles.size()) * repeats;
    const auto batches = (tile_count + config.batch_size - 1) / config.batch_size;

    // The profiling executor specialises on the first runs at the batch's shape.
    const auto batch = torch::rand({config.batch_size, source->channels(), config.tile_size, config.tile_size});
    for (int i = 0; i < 2; ++i) model.forward(batch);

    const auto model_started = Clock::now();
    for (std::int64_t i = 0; i < batches; ++i) model.forward(batch);
    const double model_s = seconds_since(model_started);
    const double model_rate = static_cast<double>(batches * config.batch_size) / model_s;

    std::vector<rt::Tile> repeated;
    for (int r = 0; r < repeats; ++r) repeated.insert(repeated.end(), tiles.begin(), tiles.end());
    rt::ReaderPool readers(*source, config.workers, rt::make_static_feed(repeated, 0, 1),
                           static_cast<std::size_t>(2 * config.batch_size + config.workers));
    DiscardOutputs discard;
    const auto stats = rt::run_pipeline(readers, model, device, discard, {config.batch_size, {}});
    const double end_to_end_rate = static_cast<double>(stats.tiles) / stats.elapsed_s;

    fmt::print("mgpr model-only: {} tiles in {:.2f} s = {:.2f} tiles/s\n", batches * config.batch_size, model_s,
               model_rate);
    fmt::print("mgpr end-to-end: {} tiles in {:.2f} s = {:.2f} tiles/s (waited {:.2f} s for data, readers busy "
               "{:.2f} s)\n",
               stats.tiles, stats.elapsed_s, end_to_end_rate, stats.data_wait_s, stats.read_s);
    fmt::print("mgpr end-to-end / model-only = {:.3f} (tile {}, batch {}, workers {}, threads {}, {})\n",
               end_to_end_rate / model_rate, config.tile_size, config.batch_size, config.workers, backend.threads,
               model.description());
    return 0;
  } catch (const std::exception& error) {
    fmt::print(stderr, "mgpr-bench-pipeline: {}\n", error.what());
    return 2;
  }
}
