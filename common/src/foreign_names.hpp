#pragma once
// Names and values people bring from the Python tools mgpr replaces (multigpu_raster's
// Hydra config, Lightning's Trainer, DeepForest's predict_tile). They are never taken
// silently: a key or value spelt their way is refused with mgpr's own spelling, so the
// user learns the name once and a typo can never change a meaning.
#include <optional>
#include <string_view>

namespace mgpr {

struct ForeignName {
  std::string_view mgpr_name;  // what to type instead
  std::string_view origin;     // whose name it is
};

// mgpr's key for a key another tool uses (`devices` -> gpus), by meaning rather than
// spelling: `input_path` is far from `image_path` by edit distance.
std::optional<ForeignName> foreign_key(std::string_view key);

// mgpr's value of `key` for a value another tool writes (precision=16-mixed -> fp16).
std::optional<ForeignName> foreign_value(std::string_view key, std::string_view value);

}  // namespace mgpr
