// A value made once by rank 0 and read by every other rank (distributed/rank0_value.hpp),
// over a store in memory: the inputs expanded once per run, so ranks that would list a
// changing folder differently still read one list.
#include "distributed/rank0_value.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>

#include "mgpr/error.hpp"
#include "mgpr/input_list.hpp"
#include "support/error_of.hpp"
#include "support/memory_store.hpp"
#include "support/temp_dir.hpp"

namespace mgpr::runtime {
namespace {
using testing::ElementsAre;

using test::MemoryStore;

void touch(const std::filesystem::path& file) { std::ofstream(file) << "x"; }

std::vector<std::string> listing(const test::TempDir& dir) {
  const std::string inputs[] = {dir.path().string()};
  return expand_inputs(inputs, {});
}

TEST(Rank0Value, RanksThatWouldListAChangingFolderDifferentlyReadRankZerosList) {
  const test::TempDir dir;
  touch(dir.path() / "a.tif");
  touch(dir.path() / "b.tif");
  MemoryStore store;
  const auto expanded = [&] { return join_with_nuls(listing(dir)); };
  const auto rank0 = split_at_nuls(value_of_rank0(store, 0, 2, "inputs", expanded));
  // The folder gains a tile between rank 0's start and rank 1's: rank 1's own listing
  // would have three rasters, and another journal key.
  touch(dir.path() / "c.tif");
  ASSERT_EQ(listing(dir).size(), 3U);
  bool rank1_listed = false;
  const auto rank1 = split_at_nuls(value_of_rank0(store, 1, 2, "inputs", [&] {
    rank1_listed = true;
    return join_with_nuls(listing(dir));
  }));
  EXPECT_FALSE(rank1_listed) << "a rank other than 0 never lists the inputs";
  EXPECT_EQ(rank1, rank0);
  EXPECT_THAT(rank1, ElementsAre(dir.file("a.tif"), dir.file("b.tif")));
}

TEST(Rank0Value, AnotherRankWaitsForRankZeroThatIsStillListing) {
  MemoryStore store;
  auto rank1 = std::async(std::launch::async, [&] { return value_of_rank0(store, 1, 2, "k", [] { return "own"; }); });
  EXPECT_EQ(rank1.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  EXPECT_EQ(value_of_rank0(store, 0, 2, "k", [] { return std::string("rank 0's"); }), "rank 0's");
  EXPECT_EQ(rank1.get(), "rank 0's");
}

TEST(Rank0Value, RankZerosRefusalIsEveryRanksWithTheSameMessage) {
  const test::TempDir dir;  // empty: no raster in it
  MemoryStore store;
  auto rank1 = std::async(std::launch::async, [&] {
    return test::error_of([&] { value_of_rank0(store, 1, 2, "inputs", [] { return std::string(); }); });
  });
  const auto rank0 = test::error_of([&] {
    value_of_rank0(
        store, 0, 2, "inputs", [&] { return join_with_nuls(listing(dir)); }, std::chrono::seconds(5));
  });
  EXPECT_THAT(rank0, testing::HasSubstr("holds no rasters"));
  EXPECT_EQ(rank1.get(), rank0);
}

TEST(Rank0Value, ListsKeepEveryByteButNul) {
  const std::vector<std::string> items{"/data/a b.tif", "/vsizip//vsis3/b/x.zip/y.tif", "tab\there", "new\nline", ""};
  EXPECT_EQ(split_at_nuls(join_with_nuls(items)), items);
  EXPECT_TRUE(split_at_nuls(join_with_nuls({})).empty());
}

}  // namespace
}  // namespace mgpr::runtime
