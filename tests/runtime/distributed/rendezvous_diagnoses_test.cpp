#include "distributed/rendezvous_diagnoses.hpp"

#include <gtest/gtest.h>

namespace mgpr::runtime {
namespace {

TEST(RendezvousMessages, RankListsUseRanges) {
  EXPECT_EQ(format_rank_list({}), "");
  EXPECT_EQ(format_rank_list({3}), "3");
  EXPECT_EQ(format_rank_list({1, 3, 4, 5, 7}), "1, 3-5, 7");
  EXPECT_EQ(format_rank_list({0, 1}), "0-1");
}

TEST(RendezvousMessages, MissingRanksAreNamedWithTheHostsOfTheOthers) {
  const std::vector<std::optional<std::string>> hosts = {"gpu01", std::nullopt, "gpu02",
                                                         "gpu01", std::nullopt, std::nullopt};
  const auto message = missing_ranks_message(hosts, "gpu01:29500", std::chrono::seconds(300));
  EXPECT_NE(message.find("ranks 1, 4-5 of 6 never reached rank 0's store at gpu01:29500 within 300 s"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("arrived: ranks 0, 3 on gpu01; rank 2 on gpu02"), std::string::npos) << message;
  EXPECT_NE(message.find("rendezvous_timeout"), std::string::npos) << message;
}

TEST(RendezvousMessages, OneMissingRankReadsSingular) {
  const auto message = missing_ranks_message({"n1", std::nullopt}, "n1:1234", std::chrono::seconds(3));
  EXPECT_NE(message.find("rank 1 of 2 never reached"), std::string::npos) << message;
  EXPECT_NE(message.find("it was started"), std::string::npos) << message;
}

TEST(RendezvousMessages, UnreachableStoreNamesAddressAndFix) {
  const auto message = store_unreachable_message(2, "10.0.0.1:29500", std::chrono::seconds(5), "connect refused");
  EXPECT_NE(message.find("rank 2 could not reach rank 0 / the store at 10.0.0.1:29500 within 5 s (connect refused)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("MASTER_ADDR"), std::string::npos);
}

}  // namespace
}  // namespace mgpr::runtime
