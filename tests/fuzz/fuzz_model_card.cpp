// A model card, the JSON a TorchScript file carries as mgpr.json: parsed, its settings
// checked as configuration, applied under a run's settings. The card comes with a model
// from anywhere, so a card that is refused must be refused as a UsageError naming it
// (exit 2), never with a JSON library's own exception. An accepted card's settings must
// be the values the card holds: the run uses them as if the user had typed them.
#include <toml++/toml.h>
#include <nlohmann/json.hpp>

#include "fuzz_input.hpp"
#include "mgpr/config.hpp"
#include "mgpr/error.hpp"
#include "mgpr/model_card.hpp"

namespace {

using Json = nlohmann::ordered_json;

bool same_value(const Json& card, const toml::node& setting) {
  if (card.is_boolean()) return setting.value<bool>() == card.get<bool>();
  if (card.is_string()) return setting.value<std::string>() == card.get<std::string>();
  if (card.is_number()) {
    // An integer past TOML's (64-bit, signed) must still be the number the card says.
    if (!setting.is_number()) return false;
    return card.is_number_unsigned() && setting.is_integer()
               ? setting.value<std::int64_t>() >= 0 &&
                     static_cast<std::uint64_t>(*setting.value<std::int64_t>()) == card.get<std::uint64_t>()
           : card.is_number_integer() && setting.is_integer()
               ? setting.value<std::int64_t>() == card.get<std::int64_t>()
               : setting.value<double>() == card.get<double>();
  }
  const auto* items = setting.as_array();
  if (!card.is_array() || items == nullptr || items->size() != card.size()) return false;
  for (std::size_t i = 0; i < card.size(); ++i) {
    if (!same_value(card[i], *items->get(i))) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = mgpr::fuzz::as_text(data, size);
  mgpr::fuzz::refusing_only_with<mgpr::UsageError>([&] {
    const auto card = mgpr::parse_model_card(text, "model.pt");
    static_cast<void>(card.summary());
    mgpr::RunConfig config;
    mgpr::apply_model_card(config, card);
    const auto json = Json::parse(card.json_text);
    const auto settings = toml::parse(card.settings_toml);
    for (const auto& key : card.setting_keys) {
      const auto& value = json.at(key);
      const auto* setting = settings.get(key);
      if (setting == nullptr) __builtin_trap();
      // The configuration holds nodata as text: a number's JSON spelling.
      const bool same = key == "nodata" && value.is_number() ? setting->value<std::string>() == value.dump()
                                                             : same_value(value, *setting);
      if (!same) __builtin_trap();
    }
  });
  return 0;
}
