#include "source/fake_source.hpp"

#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "mgpr/error.hpp"
#include "mgpr/tile_limits.hpp"

namespace mgpr::runtime {
namespace {

class FakeReader final : public TileReader {
 public:
  FakeReader(int tile_size, double delay_s) : tile_size_(tile_size), delay_(delay_s) {}

  void read(const Tile& tile, TileData& out) override {
    const auto start = std::chrono::steady_clock::now();
    // The delay stands for storage latency, so it is spent per tile on the reader
    // thread, where the reader pool can overlap it across workers.
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
    const auto side = static_cast<std::size_t>(tile_size_);
    out.tile = tile;
    out.channels = kFakeChannels;
    out.height = tile_size_;
    out.width = tile_size_;
    out.pixels.resize(static_cast<std::size_t>(kFakeChannels) * side * side);
    out.valid.clear();
    float* target = out.pixels.data();
    for (int channel = 0; channel < kFakeChannels; ++channel) {
      for (int y = 0; y < tile_size_; ++y) {
        for (int x = 0; x < tile_size_; ++x) *target++ = fake_pixel(tile.id.row, channel, y, x);
      }
    }
    out.read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

 private:
  int tile_size_;
  std::chrono::duration<double> delay_;
};

class FakeSource final : public TileSource {
 public:
  FakeSource(int count, int tile_size, double delay_s) : tile_size_(tile_size), delay_s_(delay_s) {
    tiles_.reserve(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) tiles_.push_back(Tile{TileId{0, i, 0}, PixelWindow{0, 0, tile_size, tile_size}});
  }

  [[nodiscard]] const std::vector<Tile>& tiles() const override { return tiles_; }
  [[nodiscard]] const std::vector<RasterDescription>& rasters() const override { return no_rasters_; }
  [[nodiscard]] int channels() const override { return kFakeChannels; }
  [[nodiscard]] int tile_size() const override { return tile_size_; }
  [[nodiscard]] std::unique_ptr<TileReader> open_reader() const override {
    return std::make_unique<FakeReader>(tile_size_, delay_s_);
  }

 private:
  std::vector<Tile> tiles_;
  std::vector<RasterDescription> no_rasters_;
  int tile_size_;
  double delay_s_;
};

}  // namespace

float fake_pixel(int tile_index, int channel, int y, int x) {
  return static_cast<float>((x + 2 * y + 85 * channel + 7 * tile_index) % 256) / 255.0F;
}

std::unique_ptr<TileSource> make_fake_source(const FakeDataOptions& options, int tile_size) {
  // Named by the configuration's keys: that is where the user sets them.
  if (options.count < 1) {
    throw UsageError(fmt::format("dummy_dataset_count={} must be at least 1", options.count));
  }
  if (!(options.delay_s >= 0.0)) {
    throw UsageError(fmt::format("dummy_dataset_delay={} must be 0 or more seconds per fake tile", options.delay_s));
  }
  check_tile_bytes(tile_size, 0, kFakeChannels);
  return std::make_unique<FakeSource>(options.count, tile_size, options.delay_s);
}

}  // namespace mgpr::runtime
