#include "source/fake_source.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "mgpr/error.hpp"
#include "mgpr/run_choices.hpp"
#include "mgpr/tile_limits.hpp"

namespace mgpr::runtime {
namespace {

// fake_pixel()'s integer: the pattern in 0..255, which fake_pixel() divides by 255.
int fake_level(int tile_index, int channel, int y, int x) { return (x + 2 * y + 85 * channel + 7 * tile_index) % 256; }

// What fake_level()'s 0..255 becomes in the sample type, and the type's full range: uint16
// spreads it over 0..65535 (255 * 257 = 65535), as a 16-bit sensor's samples would.
constexpr int kUInt16PerLevel = 257;
constexpr double range_of(RawSample sample) { return sample == RawSample::kUInt8 ? 255.0 : 65535.0; }
constexpr int per_level(RawSample sample) { return sample == RawSample::kUInt8 ? 1 : kUInt16PerLevel; }

// Calls `sample(level)` for every sample of tile `tile_index`, in CHW order.
template <typename Sample>
void for_each_level(int tile_index, int tile_size, Sample&& sample) {
  for (int channel = 0; channel < kFakeChannels; ++channel) {
    for (int y = 0; y < tile_size; ++y) {
      for (int x = 0; x < tile_size; ++x) sample(fake_level(tile_index, channel, y, x));
    }
  }
}

class FakeReader final : public TileReader {
 public:
  FakeReader(int tile_size, double delay_s, std::optional<RawSample> sample, bool raw)
      : tile_size_(tile_size), delay_(delay_s), sample_(sample), raw_(raw) {}

  void read(const Tile& tile, TileData& out) override {
    const auto start = std::chrono::steady_clock::now();
    // The delay stands for storage latency, so it is spent per tile on the reader
    // thread, where the reader pool can overlap it across workers.
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
    const auto side = static_cast<std::size_t>(tile_size_);
    const auto samples = static_cast<std::size_t>(kFakeChannels) * side * side;
    out.tile = tile;
    out.channels = kFakeChannels;
    out.height = tile_size_;
    out.width = tile_size_;
    out.valid.clear();
    const int index = tile.id.row;
    if (sample_ && raw_) {
      out.pixels.clear();
      out.raw_sample = *sample_;
      out.bytes.resize(samples * raw_sample_size(*sample_));
      std::uint8_t* target = out.bytes.data();
      if (*sample_ == RawSample::kUInt8) {
        for_each_level(index, tile_size_, [&](int level) { *target++ = static_cast<std::uint8_t>(level); });
      } else {
        // In the machine's byte order, as TileData::bytes holds a raster's 16-bit samples.
        for_each_level(index, tile_size_, [&](int level) {
          const auto value = static_cast<std::uint16_t>(level * kUInt16PerLevel);
          std::memcpy(target, &value, sizeof value);
          target += sizeof value;
        });
      }
    } else {
      out.bytes.clear();
      out.pixels.resize(samples);
      float* target = out.pixels.data();
      if (sample_) {
        // As the readers convert a raster's integers: the sample over the type's range.
        // v * 257 / 65535 is v / 255 exactly, so this is fake_pixel() to the bit.
        const int factor = per_level(*sample_);
        const auto range = static_cast<float>(range_of(*sample_));
        for_each_level(index, tile_size_, [&](int level) { *target++ = static_cast<float>(level * factor) / range; });
      } else {
        for_each_level(index, tile_size_, [&](int level) { *target++ = static_cast<float>(level) / 255.0F; });
      }
    }
    out.read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

 private:
  int tile_size_;
  std::chrono::duration<double> delay_;
  std::optional<RawSample> sample_;
  bool raw_;
};

class FakeSource final : public TileSource {
 public:
  FakeSource(const FakeDataOptions& options, int tile_size, bool raw_samples)
      : tile_size_(tile_size), delay_s_(options.delay_s), sample_(options.sample), raw_(raw_samples && options.sample) {
    tiles_.reserve(static_cast<std::size_t>(options.count));
    for (int i = 0; i < options.count; ++i) {
      tiles_.push_back(Tile{TileId{0, i, 0}, PixelWindow{0, 0, tile_size, tile_size}});
    }
    if (raw_) {
      // The values are already in [0, 1] once over the type's range: no mean, no std.
      const auto gain = static_cast<float>(1.0 / range_of(*sample_));
      raw_scaling_ =
          RawScaling{std::vector<float>(kFakeChannels, gain), std::vector<float>(kFakeChannels, 0.0F), *sample_};
    }
  }

  [[nodiscard]] const std::vector<Tile>& tiles() const override { return tiles_; }
  [[nodiscard]] const std::vector<RasterDescription>& rasters() const override { return no_rasters_; }
  [[nodiscard]] int channels() const override { return kFakeChannels; }
  [[nodiscard]] int tile_size() const override { return tile_size_; }
  [[nodiscard]] std::unique_ptr<TileReader> open_reader() const override {
    return std::make_unique<FakeReader>(tile_size_, delay_s_, sample_, raw_);
  }
  [[nodiscard]] std::optional<RawScaling> raw_scaling() const override { return raw_scaling_; }

 private:
  std::vector<Tile> tiles_;
  std::vector<RasterDescription> no_rasters_;
  int tile_size_;
  double delay_s_;
  std::optional<RawSample> sample_;
  bool raw_;
  std::optional<RawScaling> raw_scaling_;
};

}  // namespace

float fake_pixel(int tile_index, int channel, int y, int x) {
  return static_cast<float>(fake_level(tile_index, channel, y, x)) / 255.0F;
}

std::optional<RawSample> parse_fake_data_type(std::string_view name) {
  if (name == kFakeDataTypeNames[0]) return std::nullopt;
  if (name == kFakeDataTypeNames[1]) return RawSample::kUInt8;
  if (name == kFakeDataTypeNames[2]) return RawSample::kUInt16;
  throw UsageError(fmt::format("dummy_dataset_type={} is not a fake tile type: one of {}", name,
                               fmt::join(kFakeDataTypeNames, ", ")));
}

std::unique_ptr<TileSource> make_fake_source(const FakeDataOptions& options, int tile_size, bool raw_samples) {
  // Named by the configuration's keys: that is where the user sets them.
  if (options.count < 1) {
    throw UsageError(fmt::format("dummy_dataset_count={} must be at least 1", options.count));
  }
  if (!(options.delay_s >= 0.0)) {
    throw UsageError(fmt::format("dummy_dataset_delay={} must be 0 or more seconds per fake tile", options.delay_s));
  }
  if (options.sample == RawSample::kInt16) {
    throw UsageError(
        fmt::format("dummy_dataset_type: fake tiles are one of {}, not int16", fmt::join(kFakeDataTypeNames, ", ")));
  }
  check_tile_bytes(tile_size, 0, kFakeChannels);
  return std::make_unique<FakeSource>(options, tile_size, raw_samples);
}

}  // namespace mgpr::runtime
