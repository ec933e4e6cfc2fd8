// A rank's book of leases: what it puts on the store at each claim lists the leases with
// a tile not yet delivered, and only those, so it stays a few leases long; a failed
// raster's tiles leave it; the text read back is exactly what was put, and anything else
// is refused.
#include "distributed/lease_book.hpp"

#include <gtest/gtest.h>

#include "mgpr/store_keys.hpp"

namespace mgpr::runtime {
namespace {

std::vector<Tile> grid(int images, int tiles_each) {
  std::vector<Tile> tiles;
  for (int image = 0; image < images; ++image) {
    for (int column = 0; column < tiles_each; ++column) tiles.push_back({{image, 0, column}, {column * 64, 0, 64, 64}});
  }
  return tiles;
}

std::vector<Lease> on_store(Communicator& communicator) {
  const auto text = communicator.take_if_set(store_key(StoreKey::kLeaseLedger, communicator.rank()));
  if (!text) return {};
  return decode_leases(*text, 1'000).value();
}

TEST(LeaseBook, WhatIsPutAtEachClaimIsTheLeasesNotYetWhollyDelivered) {
  const auto tiles = grid(2, 4);
  const auto communicator = make_local_communicator();
  LeaseBook book(tiles, *communicator);
  book.claimed({0, 3});
  EXPECT_EQ(on_store(*communicator), (std::vector<Lease>{{0, 3}}));
  const std::vector<TileId> first_two{tiles[0].id, tiles[1].id};
  book.delivered(first_two);
  book.claimed({3, 5});
  EXPECT_EQ(on_store(*communicator), (std::vector<Lease>{{0, 3}, {3, 5}})) << "tile 2 of the first is not delivered";
  const std::vector<TileId> rest{tiles[2].id, tiles[3].id, tiles[2].id};  // a tile twice counts once
  book.delivered(rest);
  EXPECT_EQ(book.open_leases(), (std::vector<Lease>{{3, 5}}));
  book.claimed({5, 8});
  EXPECT_EQ(on_store(*communicator), (std::vector<Lease>{{3, 5}, {5, 8}}));
}

TEST(LeaseBook, AFailedRastersTilesLeaveTheBook) {
  const auto tiles = grid(2, 4);
  const auto communicator = make_local_communicator();
  LeaseBook book(tiles, *communicator);
  book.claimed({2, 6});  // two tiles of raster 0, two of raster 1
  book.raster_failed(1);
  EXPECT_EQ(book.open_leases(), (std::vector<Lease>{{2, 6}}));
  const std::vector<TileId> raster0{tiles[2].id, tiles[3].id};
  book.delivered(raster0);
  EXPECT_TRUE(book.open_leases().empty());
}

TEST(LeaseBook, TheTextIsReadBackExactlyAndAnythingElseIsRefused) {
  const std::vector<Lease> leases{{0, 64}, {128, 130}};
  EXPECT_EQ(decode_leases(encode_leases(leases), 130), leases);
  EXPECT_EQ(decode_leases("", 10), std::vector<Lease>{});
  for (const auto* bad : {"0 4", "0\n", "4 2\n", "0 11\n", "-1 2\n", "a b\n", "0 4 5\n", "0  4\n"}) {
    EXPECT_EQ(decode_leases(bad, 10), std::nullopt) << bad;
  }
}

}  // namespace
}  // namespace mgpr::runtime
