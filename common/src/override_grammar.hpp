#pragma once
// The part of Hydra's override grammar that mgpr's `key=value` arguments take, so
// command lines written for multigpu_raster (Lightning + Hydra) work as typed:
// `+key=value` and `++key=value` set a key (every mgpr key exists), `~key` and
// `key=null` put a key back to its default, lists come in brackets (`bands=[1,2,3]`)
// or bare (`bands=1,2,3`), and quotes keep spaces and commas in a value.
#include <string>
#include <string_view>
#include <vector>

namespace mgpr::override_grammar {

struct Override {
  std::string_view key;
  std::string_view value;  // the text after '=', untouched
  bool reset = false;      // `~key`, `~key=...` or `key=null`: back to the default
};

// Splits one argument; throws UsageError naming it when it is no override at all.
Override parse_override(std::string_view argument);

// Whether the argument is meant as an override rather than a file name: a key
// (lower case, digits, '_', '.'), optionally after '+', '++' or '~', then '=' (or
// nothing, after '~'). A file named like one is passed as ./name.
bool looks_like_override(std::string_view argument);

// The items of a list value: `[a, 'b,c', "d"]` or `a,b`; `[]` and the empty text are
// none. Quotes are removed. Throws UsageError naming `where` for an unclosed quote or
// bracket, or a nested list.
std::vector<std::string> list_items(std::string_view value, std::string_view where);

// A scalar value with its quotes removed, if it has them; throws UsageError naming
// `where` for an unclosed quote.
std::string scalar_text(std::string_view value, std::string_view where);

}  // namespace mgpr::override_grammar
