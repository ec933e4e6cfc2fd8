#include "tile_scores.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "mgpr/error.hpp"
#include "mgpr/log_layout.hpp"

namespace mgpr::runtime {
namespace {

constexpr std::string_view kHeader = "raster,image,row,column,x,y,width,height,label,score,logit\n";

// Tile rows travel between ranks as the CSV's own fields, without the raster name.
std::string encode(const std::vector<TileScore>& rows) {
  std::string text;
  for (const auto& r : rows) {
    text += fmt::format("{} {} {} {} {} {} {} {} {:.9g} {:.9g}\n", r.id.image, r.id.row, r.id.column, r.window.x,
                        r.window.y, r.window.width, r.window.height, r.label, r.score, r.logit);
  }
  return text;
}

void decode(const std::string& text, std::vector<TileScore>& rows) {
  std::istringstream in(text);
  TileScore r;
  while (in >> r.id.image >> r.id.row >> r.id.column >> r.window.x >> r.window.y >> r.window.width >>
         r.window.height >> r.label >> r.score >> r.logit) {
    rows.push_back(r);
  }
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + '"';
}

}  // namespace

void TileScores::consume(std::span<const TileData> tiles, const torch::IValue& output) {
  const auto batch = static_cast<std::int64_t>(tiles.size());
  if (!output.isTensor() || output.toTensor().dim() != 2 || output.toTensor().size(0) != batch) {
    throw UsageError(fmt::format("model '{}' returned {} for a batch of {} tiles; task=classify needs a [B, C] "
                                 "tensor of logits (one row per tile)",
                                 model_name_, output.isTensor() ? fmt::format("a tensor of shape [{}]",
                                                                              fmt::join(output.toTensor().sizes(), ", "))
                                                                : std::string(output.tagKind()),
                                 batch));
  }
  const auto logits = output.toTensor().to(torch::kCPU, torch::kDouble);
  const auto probabilities = torch::softmax(logits, 1);
  const auto [best, labels] = logits.max(1);
  for (std::int64_t i = 0; i < batch; ++i) {
    const auto label = labels[i].item<std::int64_t>();
    rows_.push_back({tiles[static_cast<std::size_t>(i)].tile.id, tiles[static_cast<std::size_t>(i)].tile.window,
                     label, probabilities[i][label].item<double>(), best[i].item<double>()});
  }
}

std::string to_csv_line(const TileScore& r, const std::string& raster_name) {
  return fmt::format("{},{},{},{},{},{},{},{},{},{:.9g},{:.9g}\n", csv_field(raster_name), r.id.image, r.id.row,
                     r.id.column, r.window.x, r.window.y, r.window.width, r.window.height, r.label, r.score,
                     r.logit);
}

void gather_and_write_scores(const std::vector<TileScore>& rows, Communicator& communicator,
                             const std::vector<std::string>& raster_names, const std::filesystem::path& file) {
  const auto gathered = communicator.all_gather(encode(rows));
  if (communicator.rank() != 0) return;
  std::vector<TileScore> all;
  for (const auto& text : gathered) decode(text, all);
  std::sort(all.begin(), all.end(), [](const TileScore& a, const TileScore& b) { return a.id < b.id; });
  std::string csv(kHeader);
  for (const auto& row : all) {
    const auto image = static_cast<std::size_t>(row.id.image);
    csv += to_csv_line(row, image < raster_names.size() ? raster_names[image] : std::string("fake"));
  }
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path());
  write_file_atomically(file, csv);
}

}  // namespace mgpr::runtime
