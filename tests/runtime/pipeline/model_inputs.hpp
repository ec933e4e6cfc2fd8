#pragma once
// What a model is fed, tile by tile: a model that returns its input, run through the
// rank's loop, and a consumer that keeps each tile's row. The raw-sample tests (Byte and
// 16-bit rasters, fake tiles of an integer type) compare these with the float path's.
#include <torch/script.h>

#include <map>
#include <span>
#include <string>

#include "distributed/sharding.hpp"
#include "model/execution_policy.hpp"
#include "model/model.hpp"
#include "pipeline/pipeline.hpp"

namespace mgpr::test {

// A model saved to `file` that returns its input (times 1.0, so TorchScript keeps a graph).
inline runtime::TileModel identity_model(const std::string& file, const runtime::DeviceChoice& cpu, int channels,
                                         int tile_size) {
  torch::jit::Module module("Identity");
  module.register_attribute("training", c10::BoolType::get(), false);
  module.define(R"(
def forward(self, x):
    return x * 1.0
)");
  module.save(file);
  const auto plans = runtime::plan_execution({mgpr::Precision::kFp32, false, false}, runtime::execution_facts(cpu));
  return runtime::TileModel({file, {}, tile_size}, cpu, channels, plans);
}

class RecordInputs final : public runtime::BatchConsumer {
 public:
  void consume(std::span<const runtime::TileData> tiles, const torch::IValue& output) override {
    const auto batch = output.toTensor();
    for (std::size_t i = 0; i < tiles.size(); ++i) by_tile[tiles[i].tile.id] = batch[static_cast<long>(i)].clone();
  }
  std::map<runtime::TileId, torch::Tensor> by_tile;
};

// Every tile of `source` through `model` in batches of 3 (a short last one where the
// count says so), on the CPU, raw tiles scaled as the run scales them.
inline std::map<runtime::TileId, torch::Tensor> model_inputs(const runtime::TileSource& source,
                                                             runtime::TileModel& model) {
  RecordInputs inputs;
  runtime::PipelineOptions options;
  options.batch_size = 3;
  options.raw_scaling = source.raw_scaling();
  runtime::run_pipeline({source, 2, runtime::make_static_feed(source.tiles(), 0, 1), 8}, model, runtime::DeviceChoice{},
                        inputs, options);
  return inputs.by_tile;
}

}  // namespace mgpr::test
