// A model file's zip directory, read without a zip library to find the model card: any
// bytes a user may give as model=. The reader takes a path, so the bytes go to a file.
// Two look-ups: the first member of all, whatever its name, and the model card as the
// run reads it (under the archive's top folder, then parsed).
#include "fuzz_input.hpp"
#include "mgpr/error.hpp"
#include "mgpr/model_card.hpp"
#include "zip_member.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static mgpr::fuzz::InputFile file("model.pt");
  const auto& path = file.write(data, size);
  constexpr std::uint64_t kMaxBytes = 4096;
  // ZipMemberError is how a member that is there but cannot be read is refused.
  mgpr::fuzz::refusing_only_with<mgpr::ZipMemberError>([&] {
    const auto member = mgpr::read_zip_member(
        path, [](std::string_view) { return true; }, kMaxBytes);
    if (member && member->content.size() > kMaxBytes) __builtin_trap();
  });
  // The card reader turns those into a UsageError naming the file, as it must every
  // refusal: the run reads the card before anything else.
  mgpr::fuzz::refusing_only_with<mgpr::UsageError>([&] {
    const auto card = mgpr::read_model_card(path);
    if (card && card->model_file != path) __builtin_trap();
  });
  return 0;
}
