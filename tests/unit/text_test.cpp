// The one way every program reads numbers and lists from text it did not write.
#include "mgpr/text.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using mgpr::EmptyItems;
using mgpr::parse_number;
using mgpr::split_list;

TEST(Text, ANumberIsTheWholeTextOrNothing) {
  EXPECT_EQ(parse_number<int>("12"), 12);
  EXPECT_EQ(parse_number<int>("-3"), -3);
  EXPECT_EQ(parse_number<double>("0.25"), 0.25);
  for (const char* bad : {"", "12abc", " 1", "1 ", "+1", "0x10", "1e99999", "99999999999"}) {
    EXPECT_EQ(parse_number<int>(bad), std::nullopt) << "'" << bad << "'";
  }
}

TEST(Text, ARangedNumberOutsideItsRangeIsNothing) {
  EXPECT_EQ(parse_number<int>("5", 1, 5), 5);
  EXPECT_EQ(parse_number<int>("0", 1, 5), std::nullopt);
  EXPECT_EQ(parse_number<int>("6", 1, 5), std::nullopt);
}

TEST(Text, ListsDropOrKeepEmptyItems) {
  EXPECT_EQ(split_list(",2,,3,"), (std::vector<std::string>{"2", "3"}));
  EXPECT_EQ(split_list("1,,3", ',', EmptyItems::kKeep), (std::vector<std::string>{"1", "", "3"}));
  EXPECT_EQ(split_list("a|b", '|'), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(split_list("").empty());
  EXPECT_TRUE(split_list("", ',', EmptyItems::kKeep).empty());
}

TEST(Text, AHostileValueIsQuotedShort) {
  EXPECT_EQ(mgpr::quote_short("abc"), "'abc'");
  const auto quoted = mgpr::quote_short(std::string(100000, 'x'));
  EXPECT_LT(quoted.size(), 80U);
  EXPECT_NE(quoted.find("(100000 characters)"), std::string::npos) << quoted;
}

TEST(Text, ControlBytesArePrintedAsEscapes) {
  EXPECT_EQ(mgpr::printable("a\tb"), "a\tb");
  EXPECT_EQ(mgpr::printable("\x1b[31mred\x7f"), "\\x1b[31mred\\x7f");
  EXPECT_EQ(mgpr::printable("caf\xc3\xa9"), "caf\xc3\xa9");  // UTF-8 stays
}

}  // namespace

namespace {

TEST(Text, Utf8IsTellsWellFormedTextFromOtherBytes) {
  EXPECT_TRUE(mgpr::is_utf8(""));
  EXPECT_TRUE(mgpr::is_utf8("plain/ascii.tif"));
  EXPECT_TRUE(mgpr::is_utf8("for\xC3\xAAt/\xE6\xA3\xAE/\xF0\x9F\x8C\xB2.tif"));  // forêt, 森, a tree emoji
  EXPECT_FALSE(mgpr::is_utf8("latin1-\xFF.tif"));
  EXPECT_FALSE(mgpr::is_utf8("cut-\xC3"));          // a lead byte at the end
  EXPECT_FALSE(mgpr::is_utf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(mgpr::is_utf8("\xED\xA0\x80"));      // a surrogate
  EXPECT_FALSE(mgpr::is_utf8("\xF4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(mgpr::is_utf8("\xE6\xA3"));          // cut short
  EXPECT_FALSE(mgpr::is_utf8("\x80"));              // a continuation alone
}

}  // namespace
