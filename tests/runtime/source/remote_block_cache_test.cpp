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
