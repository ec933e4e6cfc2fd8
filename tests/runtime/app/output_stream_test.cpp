// Rank 0's writer while the tiles run: a raster's outputs are written as soon as every
// one of its tiles is done and every raster before it was written, before the loop
// ends; results of earlier runs count; a raster that failed is left out at the end with
// its reason; a failure of the writing reaches the rank when it drains the stream.
#include "app/output_stream.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace {

using mgpr::runtime::OutputPlan;
using mgpr::runtime::OutputStream;
using mgpr::runtime::RasterOutcome;
using mgpr::runtime::TileId;
using mgpr::runtime::TileResults;
using testing::ElementsAre;

// Rasters of two tiles each; what the stream asks of the task is recorded.
class RecordingOutput final : public mgpr::runtime::TaskOutput {
 public:
  explicit RecordingOutput(int rasters) {
    for (int image = 0; image < rasters; ++image) {
      plan_.rasters.push_back({});
      plan_.rasters.back().path = "r" + std::to_string(image) + ".tif";
      for (int column = 0; column < 2; ++column) plan_.tiles.push_back({{image, 0, column}, {column * 64, 0, 64, 64}});
    }
  }
  [[nodiscard]] const OutputPlan& plan() const override { return plan_; }
  void check_output(const torch::IValue& /*output*/, std::int64_t /*batch*/, int /*tile_size*/) const override {}

  std::int64_t write_raster(int image, TileResults::const_iterator first, TileResults::const_iterator last,
                            std::vector<std::filesystem::path>& written) override {
    if (image == fail_at) throw std::runtime_error("the disk is full");
    std::string joined;
    for (auto at = first; at != last; ++at) joined += at->second;
    const std::lock_guard lock(mutex_);
    rasters_.emplace_back(image, joined);
    written.emplace_back(plan_.rasters.at(static_cast<std::size_t>(image)).path + ".out");
    changed_.notify_all();
    return std::distance(first, last) * 10;
  }
  void finish_outputs(std::span<const RasterOutcome> outcomes, std::vector<std::filesystem::path>& written) override {
    outcomes_.assign(outcomes.begin(), outcomes.end());
    written.emplace_back("run.out");
  }

  // The rasters written so far, waiting up to 10 s for `count` of them.
  std::vector<std::pair<int, std::string>> written(std::size_t count) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, std::chrono::seconds(10), [&] { return rasters_.size() >= count; });
    return rasters_;
  }

  std::vector<RasterOutcome> outcomes_;
  int fail_at = -1;

 protected:
  std::vector<std::string> encode_batch(std::span<const mgpr::runtime::TileData> /*tiles*/,
                                        const torch::IValue& /*output*/) override {
    return {};
  }

 private:
  OutputPlan plan_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::pair<int, std::string>> rasters_;
};

TileResults one(int image, int column, std::string payload) { return {{TileId{image, 0, column}, std::move(payload)}}; }

TEST(OutputStream, ARasterIsWrittenOnceFinalAndAfterTheRastersBeforeIt) {
  RecordingOutput output(3);
  const auto communicator = mgpr::runtime::make_local_communicator();
  OutputStream stream(output, {}, *communicator);
  stream.take(one(1, 0, "b"));
  stream.take(one(1, 1, "B"));
  // Raster 1 is final but raster 0 is not: nothing yet, so the files keep raster order.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(output.written(0).empty());
  stream.take(one(0, 1, "A"));
  stream.take(one(0, 0, "a"));
  // Both written while the "loop" still runs: before drain.
  EXPECT_THAT(output.written(2), ElementsAre(std::pair{0, std::string("aA")}, std::pair{1, std::string("bB")}));
  stream.take(one(2, 0, "c"));
  stream.drain();
  const auto files = stream.finish({{2, "cannot read r2.tif"}});
  // Raster 2 failed: left out.
  EXPECT_THAT(output.written(0), ElementsAre(std::pair{0, std::string("aA")}, std::pair{1, std::string("bB")}));
  EXPECT_THAT(files, ElementsAre("r0.tif.out", "r1.tif.out", "run.out"));
  ASSERT_EQ(output.outcomes_.size(), 3U);
  EXPECT_EQ(output.outcomes_[0].tiles_done, 2);
  EXPECT_EQ(output.outcomes_[0].results, 20);
  EXPECT_FALSE(output.outcomes_[0].failed);
  EXPECT_TRUE(output.outcomes_[2].failed);
  EXPECT_EQ(output.outcomes_[2].error, "cannot read r2.tif");
  EXPECT_EQ(output.outcomes_[2].tiles, 2);
  EXPECT_EQ(output.outcomes_[2].tiles_done, 1);
  EXPECT_EQ(output.outcomes_[2].results, 0);
}

// A resumed run: what earlier runs journaled completes rasters with the new results,
// and a raster earlier runs finished whole is written without waiting for any tile.
TEST(OutputStream, EarlierRunsResultsCount) {
  RecordingOutput output(2);
  const auto communicator = mgpr::runtime::make_local_communicator();
  TileResults earlier{{TileId{0, 0, 0}, "a"}, {TileId{0, 0, 1}, "A"}, {TileId{1, 0, 0}, "b"}};
  OutputStream stream(output, std::move(earlier), *communicator);
  EXPECT_THAT(output.written(1), ElementsAre(std::pair{0, std::string("aA")}));
  stream.take(one(1, 1, "B"));
  stream.drain();
  stream.finish({});
  EXPECT_THAT(output.written(2), ElementsAre(std::pair{0, std::string("aA")}, std::pair{1, std::string("bB")}));
}

TEST(OutputStream, AFailedWriteReachesTheRankAtDrain) {
  RecordingOutput output(2);
  output.fail_at = 0;
  const auto communicator = mgpr::runtime::make_local_communicator();
  OutputStream stream(output, {}, *communicator);
  stream.take(one(0, 0, "a"));
  stream.take(one(0, 1, "A"));
  stream.take(one(1, 0, "b"));
  stream.take(one(1, 1, "B"));
  EXPECT_THROW(
      try { stream.drain(); } catch (const std::runtime_error& error) {
        EXPECT_STREQ(error.what(), "the disk is full");
        throw;
      },
      std::runtime_error);
  EXPECT_TRUE(output.written(0).empty());
}

}  // namespace
