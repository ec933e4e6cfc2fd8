// GDAL's cache of downloaded blocks is sized by the run's reader threads, within bounds,
// and a size the user set is left alone. The option is process-wide: each case starts
// from it unset.
#include <cpl_conv.h>
#include <gtest/gtest.h>

#include <string>

#include "gdal/remote_reads.hpp"

namespace {

using mgpr::runtime::kRemoteCacheBytesPerReader;
using mgpr::runtime::kRemoteCacheMaxBytes;
using mgpr::runtime::kRemoteCacheMinBytes;
using mgpr::runtime::size_remote_block_cache;

std::string cache_size() {
  const char* value = CPLGetConfigOption("CPL_VSIL_CURL_CACHE_SIZE", nullptr);
  return value == nullptr ? std::string("unset") : std::string(value);
}

class RemoteBlockCache : public testing::Test {
 protected:
  void SetUp() override { CPLSetConfigOption("CPL_VSIL_CURL_CACHE_SIZE", nullptr); }
  void TearDown() override { CPLSetConfigOption("CPL_VSIL_CURL_CACHE_SIZE", nullptr); }
};

TEST_F(RemoteBlockCache, GrowsWithTheReadersWithinItsBounds) {
  size_remote_block_cache(8);
  EXPECT_EQ(cache_size(), std::to_string(8 * kRemoteCacheBytesPerReader));
  // Sized once: GDAL reads the option at the first remote read.
  size_remote_block_cache(2);
  EXPECT_EQ(cache_size(), std::to_string(8 * kRemoteCacheBytesPerReader));

  CPLSetConfigOption("CPL_VSIL_CURL_CACHE_SIZE", nullptr);
  size_remote_block_cache(1);
  EXPECT_EQ(cache_size(), std::to_string(kRemoteCacheMinBytes));
  CPLSetConfigOption("CPL_VSIL_CURL_CACHE_SIZE", nullptr);
  size_remote_block_cache(1000);
  EXPECT_EQ(cache_size(), std::to_string(kRemoteCacheMaxBytes));
}

TEST_F(RemoteBlockCache, TheUsersOwnSizeIsKept) {
  CPLSetConfigOption("CPL_VSIL_CURL_CACHE_SIZE", "1000000");
  size_remote_block_cache(16);
  EXPECT_EQ(cache_size(), "1000000");
}

}  // namespace

namespace {

// Which paths get the remote settings and messages is common's one rule
// (mgpr/input_kind.hpp), chains and streaming forms included.
TEST(RemotePaths, AreTheChainsThroughANetworkFileSystem) {
  using mgpr::runtime::is_remote_path;
  for (const auto* remote : {"/vsicurl/https://h/a.tif", "/vsicurl_streaming/https://h/a.tif", "/vsis3/b/a.tif",
                             "/vsiwebhdfs/http://h/webhdfs/v1/a.tif", "/vsihdfs/hdfs://h:9000/a.tif",
                             "/vsizip//vsis3/b/x.zip/y.tif", "/vsizip/{/vsigs/b/archive}/y.tif"}) {
    EXPECT_TRUE(is_remote_path(remote)) << remote;
  }
  for (const auto* local : {"/data/a.tif", "/vsizip//data/a.zip/x.tif", "/vsimem/a.tif", "/data/vsis3/a.tif"}) {
    EXPECT_FALSE(is_remote_path(local)) << local;
  }
}

TEST(RemotePaths, AreShownWithoutTheirQueryString) {
  using mgpr::runtime::shown_remote_path;
  EXPECT_EQ(shown_remote_path("/vsicurl/https://h/a.tif?X-Amz-Signature=abc"), "/vsicurl/https://h/a.tif?...");
  EXPECT_EQ(shown_remote_path("/vsizip//vsicurl/https://h/x.zip/y.tif"), "/vsizip//vsicurl/https://h/x.zip/y.tif");
  EXPECT_EQ(shown_remote_path("/vsicurl?url=https%3A%2F%2Fh%2Fa.tif"), "/vsicurl?url=https%3A%2F%2Fh%2Fa.tif");
}

}  // namespace
