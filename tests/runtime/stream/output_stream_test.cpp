// Rank 0's writer while the tiles run: a row of a raster's tiles is written as soon as
// every tile of it is done and every row before it (of this raster and the rasters
// before) was written, before the loop ends; results of earlier runs count; a raster that
// failed is left out with its reason, and holds nothing back once the stream hears of it;
// a failure of the writing reaches the rank when it drains the stream.
#include "stream/output_stream.hpp"
#include "stream/writer_pace.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <tuple>

namespace {

using mgpr::runtime::OutputPlan;
using mgpr::runtime::OutputStream;
using mgpr::runtime::RasterOutcome;
using mgpr::runtime::RasterRow;
using mgpr::runtime::TileId;
using mgpr::runtime::TileResults;
using testing::ElementsAre;

using Written = std::tuple<int, int, bool, std::string>;  // image, row, last row, the row's results

// Rasters of 2 x 2 tiles; what the stream asks of the task is recorded.
class RecordingOutput final : public mgpr::runtime::TaskOutput {
 public:
  explicit RecordingOutput(int rasters) {
    for (int image = 0; image < rasters; ++image) {
      plan_.rasters.push_back({});
      plan_.rasters.back().path = "r" + std::to_string(image) + ".tif";
      for (int row = 0; row < 2; ++row) {
        for (int column = 0; column < 2; ++column)
          plan_.tiles.push_back({{image, row, column}, {column * 64, row * 64, 64, 64}});
      }
    }
  }
  [[nodiscard]] const OutputPlan& plan() const override { return plan_; }
  void check_output(const torch::IValue& /*output*/, std::int64_t /*batch*/, int /*tile_size*/) const override {}

  std::int64_t write_row(const RasterRow& row, TileResults::const_iterator first, TileResults::const_iterator last,
                         std::vector<std::filesystem::path>& written) override {
    if (row.image == fail_at) throw std::runtime_error("the disk is full");
    std::string joined;
    for (auto at = first; at != last; ++at) joined += at->second;
    const std::lock_guard lock(mutex_);
    rows_.emplace_back(row.image, row.row, row.last, joined);
    if (row.last) written.emplace_back(plan_.rasters.at(static_cast<std::size_t>(row.image)).path + ".out");
    changed_.notify_all();
    return std::distance(first, last) * 10;
  }
  void abandon_raster(int image) override {
    const std::lock_guard lock(mutex_);
    abandoned.push_back(image);
  }
  void finish_outputs(std::span<const RasterOutcome> outcomes, std::vector<std::filesystem::path>& written) override {
    outcomes_.assign(outcomes.begin(), outcomes.end());
    written.emplace_back("run.out");
  }

  // The rows written so far, waiting up to 10 s for `count` of them.
  std::vector<Written> written(std::size_t count) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, std::chrono::seconds(10), [&] { return rows_.size() >= count; });
    return rows_;
  }

  std::vector<RasterOutcome> outcomes_;
  std::vector<int> abandoned;
  int fail_at = -1;

 protected:
  std::vector<std::string> encode_batch(std::span<const mgpr::runtime::TileData> /*tiles*/,
                                        const torch::IValue& /*output*/,
                                        const mgpr::runtime::BatchInput& /*input*/) override {
    return {};
  }

 private:
  OutputPlan plan_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Written> rows_;
};

TileResults one(int image, int row, int column, std::string payload) {
  return {{TileId{image, row, column}, std::move(payload)}};
}

// Nothing is written while the rows before are unfinished, however much after them is done.
void expect_nothing_yet(RecordingOutput& output) {
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(output.written(0).empty());
}

TEST(OutputStream, ARowIsWrittenOnceFinalAndAfterTheRowsBeforeIt) {
  RecordingOutput output(3);
  const auto communicator = mgpr::runtime::make_local_communicator();
  OutputStream stream(output, {}, *communicator, 0);
  // Raster 1 whole and raster 0's second row: nothing, raster 0's first row is unfinished.
  for (int row = 0; row < 2; ++row) {
    stream.take(one(1, row, 0, "b"));
    stream.take(one(1, row, 1, "B"));
  }
  stream.take(one(0, 1, 0, "x"));
  stream.take(one(0, 1, 1, "X"));
  stream.take(one(0, 0, 1, "A"));
  expect_nothing_yet(output);
  stream.take(one(0, 0, 0, "a"));
  // Everything final is written while the "loop" still runs: before drain.
  EXPECT_THAT(output.written(4), ElementsAre(Written{0, 0, false, "aA"}, Written{0, 1, true, "xX"},
                                             Written{1, 0, false, "bB"}, Written{1, 1, true, "bB"}));
  stream.take(one(2, 0, 0, "c"));
  stream.take(one(2, 0, 1, "C"));
  EXPECT_EQ(output.written(5).size(), 5U);
  stream.take(one(2, 1, 0, "d"));
  stream.drain();
  // At most the 7 results that waited for "a", and "a": 8 held unwritten at once.
  EXPECT_EQ(stream.held_peak_tiles(), 8);
  const auto files = stream.finish({{2, "cannot read r2.tif"}});
  // Raster 2 failed after its first row was written: the rest is left out, its own files abandoned.
  EXPECT_EQ(output.written(0).size(), 5U);
  EXPECT_THAT(output.abandoned, ElementsAre(2));
  EXPECT_THAT(files, ElementsAre("r0.tif.out", "r1.tif.out", "run.out"));
  ASSERT_EQ(output.outcomes_.size(), 3U);
  EXPECT_EQ(output.outcomes_[0].tiles, 4);
  EXPECT_EQ(output.outcomes_[0].tiles_done, 4);
  EXPECT_EQ(output.outcomes_[0].results, 40);
  EXPECT_FALSE(output.outcomes_[0].failed);
  EXPECT_TRUE(output.outcomes_[2].failed);
  EXPECT_EQ(output.outcomes_[2].error, "cannot read r2.tif");
  EXPECT_EQ(output.outcomes_[2].tiles, 4);
  EXPECT_EQ(output.outcomes_[2].tiles_done, 3);
  EXPECT_EQ(output.outcomes_[2].results, 20);  // its first row, already in the run's files
}

// A resumed run: what earlier runs journaled completes rows with the new results, and
// rows earlier runs finished whole are written without waiting for any tile.
TEST(OutputStream, EarlierRunsResultsCount) {
  RecordingOutput output(1);
  const auto communicator = mgpr::runtime::make_local_communicator();
  TileResults earlier{{TileId{0, 0, 0}, "a"}, {TileId{0, 0, 1}, "A"}, {TileId{0, 1, 0}, "b"}};
  OutputStream stream(output, std::move(earlier), *communicator, 0);
  EXPECT_THAT(output.written(1), ElementsAre(Written{0, 0, false, "aA"}));
  stream.take(one(0, 1, 1, "B"));
  stream.drain();
  stream.finish({});
  EXPECT_THAT(output.written(2), ElementsAre(Written{0, 0, false, "aA"}, Written{0, 1, true, "bB"}));
}

// A raster some rank could not read is given up as soon as the stream hears of it: the
// rows of the rasters after it are written while the tiles still run, what came of it is
// dropped, and the pacing counts its tiles as written.
TEST(OutputStream, ARasterFailedWhileTheTilesRunHoldsNothingBack) {
  RecordingOutput output(3);
  const auto communicator = mgpr::runtime::make_local_communicator();
  OutputStream stream(output, {}, *communicator, 0);
  stream.take(one(0, 0, 0, "a"));
  for (int image = 1; image < 3; ++image) {
    for (int row = 0; row < 2; ++row) {
      stream.take(one(image, row, 0, "b"));
      stream.take(one(image, row, 1, "B"));
    }
  }
  expect_nothing_yet(output);
  stream.raster_failed(0, "cannot read r0.tif");
  EXPECT_THAT(output.written(4), ElementsAre(Written{1, 0, false, "bB"}, Written{1, 1, true, "bB"},
                                             Written{2, 0, false, "bB"}, Written{2, 1, true, "bB"}));
  EXPECT_THAT(output.abandoned, ElementsAre(0));
  stream.take(one(0, 0, 1, "A"));  // a tile another rank read before it heard
  stream.drain();
  EXPECT_EQ(mgpr::runtime::tiles_written(*communicator, 0), 12);  // counted when raster 0 was passed over
  const auto files = stream.finish({{0, "cannot read r0.tif"}});
  EXPECT_THAT(files, ElementsAre("r1.tif.out", "r2.tif.out", "run.out"));
  EXPECT_EQ(output.written(0).size(), 4U);
  EXPECT_THAT(output.abandoned, ElementsAre(0));
  ASSERT_EQ(output.outcomes_.size(), 3U);
  EXPECT_TRUE(output.outcomes_[0].failed);
  EXPECT_EQ(output.outcomes_[0].tiles_done, 2);
  EXPECT_EQ(output.outcomes_[0].results, 0);
  EXPECT_EQ(output.outcomes_[2].results, 40);
}

TEST(OutputStream, AFailedWriteReachesTheRankAtDrain) {
  RecordingOutput output(2);
  output.fail_at = 0;
  const auto communicator = mgpr::runtime::make_local_communicator();
  OutputStream stream(output, {}, *communicator, 0);
  for (int image = 0; image < 2; ++image) {
    for (int row = 0; row < 2; ++row) {
      stream.take(one(image, row, 0, "a"));
      stream.take(one(image, row, 1, "A"));
    }
  }
  EXPECT_THROW(
      try { stream.drain(); } catch (const std::runtime_error& error) {
        EXPECT_STREQ(error.what(), "the disk is full");
        throw;
      },
      std::runtime_error);
  EXPECT_TRUE(output.written(0).empty());
  // The ranks no longer wait for rows that will not be written.
  EXPECT_GE(mgpr::runtime::tiles_written(*communicator, 0), mgpr::runtime::kReleasedCount);
}

}  // namespace
