// The store's key table (mgpr/store_keys.hpp): one row per key, no key that another
// row's keys could ever spell, and the parts each key takes.
#include "mgpr/store_keys.hpp"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>

namespace mgpr {
namespace {

TEST(StoreKeys, EveryKeyHasExactlyOneRowAndEveryNameIsItsOwn) {
  std::set<StoreKey> keys;
  std::set<std::string_view> names;
  for (const auto& row : kStoreKeys) {
    EXPECT_TRUE(keys.insert(row.key).second) << row.name << ": a second row for its key";
    EXPECT_TRUE(names.insert(row.name).second) << row.name << ": a name two rows share";
    EXPECT_FALSE(row.holds.empty()) << row.name << ": says nothing of what it holds";
    EXPECT_NO_THROW(store_key_row(row.key)) << row.name;
  }
  // The enum's last value: a key added to the enum without its row fails here.
  EXPECT_EQ(keys.size(), static_cast<std::size_t>(StoreKey::kTilesWritten) + 1);
}

TEST(StoreKeys, NoKeyWithPartsCanEqualAnotherRowsKey) {
  for (const auto& row : kStoreKeys) {
    for (const auto& other : kStoreKeys) {
      if (&row == &other) continue;
      const auto below = std::string(row.name) + "/";
      EXPECT_FALSE(other.name.starts_with(below)) << other.name << " lies under " << row.name;
    }
  }
}

TEST(StoreKeys, AKeyIsItsNameAndItsPartsJoinedBySlashes) {
  EXPECT_EQ(store_key(StoreKey::kArrivedCount), "rendezvous/arrived");
  EXPECT_EQ(store_key(StoreKey::kArrivedHost, 3), "arrived/3");
  EXPECT_EQ(store_key(StoreKey::kResultMail, 0, 5, "sent"), "stream/results/0/5/sent");
  EXPECT_EQ(store_key(StoreKey::kNcclStep, "collective/2", 1), "nccl/step/collective/2/1");
}

TEST(StoreKeys, TheWrongNumberOfPartsIsRefusedNamingTheKey) {
  try {
    (void)store_key(StoreKey::kArrivedHost);
    FAIL() << "a key without its rank";
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("arrived takes the parts <rank>, not 0"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW((void)store_key(StoreKey::kTilesDone, 1), std::logic_error);
}

// A rank's requests are counted by the row of their key: every key a row makes is found
// again as that row, and a key of no row is none.
TEST(StoreKeys, EveryKeyARowMakesIsFoundAgainAsThatRow) {
  for (const auto& row : kStoreKeys) {
    std::string key(row.name);
    for (const char part : row.parts) {
      if (part == '<') key += "/7";
    }
    EXPECT_EQ(store_key_of(key), row.key) << key;
  }
  EXPECT_EQ(store_key_of("stream/results/0/5/sent"), StoreKey::kResultMail);
  EXPECT_EQ(store_key_of("rendezvous/verdict_read"), StoreKey::kVerdictRead);
  EXPECT_EQ(store_key_of("tiles/next/3"), std::nullopt);  // a row without parts, given one
  EXPECT_EQ(store_key_of("arrived"), std::nullopt);       // a row with parts, given none
  EXPECT_EQ(store_key_of("tiles/nextx"), std::nullopt);
  EXPECT_EQ(store_key_of(""), std::nullopt);
}

}  // namespace
}  // namespace mgpr
