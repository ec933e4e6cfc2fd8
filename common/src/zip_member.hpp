#pragma once
// One member of a zip archive, read without a zip library: TorchScript files are zip
// archives whose members PyTorch stores uncompressed, so a small reader of the central
// directory (zip64 included) finds an extra file such as the model card without loading
// the model. Internal to common/src.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace mgpr {

struct ZipMember {
  std::string name;     // as the archive names it
  std::string content;  // its bytes
};

// Why a member that is there could not be read.
struct ZipMemberError {
  std::string name;
  std::string what;  // "is compressed (method 8)", "holds ... bytes, more than ...", "is cut short ..."
};

// The first member for which `wanted(name)` holds. nullopt when the file cannot be
// opened, is no zip archive, or has no such member; ZipMemberError (thrown) when the
// member is there but cannot be read: compressed, larger than `max_bytes`, or truncated.
std::optional<ZipMember> read_zip_member(const std::filesystem::path& file,
                                         const std::function<bool(std::string_view)>& wanted, std::uint64_t max_bytes);

}  // namespace mgpr
