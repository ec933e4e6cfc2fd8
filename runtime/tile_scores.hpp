#pragma once
// Per-tile results of task=classify: the model's [B, C] logits become a label, its
// softmax score and its logit per tile. Each rank keeps its rows; rank 0 gathers them
// and writes one CSV, sorted by tile id, under a temporary name renamed when complete.
#include <filesystem>
#include <string>
#include <vector>

#include "communicator.hpp"
#include "pipeline.hpp"

namespace mgpr::runtime {

struct TileScore {
  TileId id;
  PixelWindow window;
  std::int64_t label = 0;
  double score = 0;  // softmax probability of the label
  double logit = 0;  // the label's raw output
};

class TileScores final : public BatchConsumer {
 public:
  explicit TileScores(std::string model_name) : model_name_(std::move(model_name)) {}
  // Throws UsageError when the output is not a [B, C] tensor with B the batch's tiles.
  void consume(std::span<const TileData> tiles, const torch::IValue& output) override;
  [[nodiscard]] const std::vector<TileScore>& rows() const { return rows_; }

 private:
  std::string model_name_;
  std::vector<TileScore> rows_;
};

std::string to_csv_line(const TileScore& row, const std::string& raster_name);
// Every rank calls it; rank 0 writes `file` with the rows of all ranks. `raster_names`
// index TileId::image.
void gather_and_write_scores(const std::vector<TileScore>& rows, Communicator& communicator,
                             const std::vector<std::string>& raster_names, const std::filesystem::path& file);

}  // namespace mgpr::runtime
