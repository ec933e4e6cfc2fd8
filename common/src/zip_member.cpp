#include "zip_member.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <vector>

namespace mgpr {
namespace {

constexpr std::uint32_t kEndOfCentralDirectory = 0x06054b50;
constexpr std::uint32_t kZip64EndLocator = 0x07064b50;
constexpr std::uint32_t kZip64End = 0x06064b50;
constexpr std::uint32_t kCentralHeader = 0x02014b50;
constexpr std::uint32_t kLocalHeader = 0x04034b50;
constexpr std::uint16_t kZip64ExtraField = 0x0001;
constexpr std::uint32_t kSaturated32 = 0xffffffffU;
constexpr std::size_t kEndRecordSize = 22;
// The end record's comment is at most 65535 bytes: the record lies in the last 64 KiB.
constexpr std::size_t kEndSearchBytes = kEndRecordSize + 0xffff;
// A model's central directory lists a few hundred members; more than this is no model.
constexpr std::uint64_t kMaxCentralDirectory = std::uint64_t{64} << 20;

std::uint64_t little_endian(const char* bytes, int size) {
  std::uint64_t value = 0;
  for (int i = size - 1; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(bytes[i]);
  return value;
}
std::uint16_t u16(const std::string& buffer, std::size_t at) {
  return static_cast<std::uint16_t>(little_endian(buffer.data() + at, 2));
}
std::uint32_t u32(const std::string& buffer, std::size_t at) {
  return static_cast<std::uint32_t>(little_endian(buffer.data() + at, 4));
}
std::uint64_t u64(const std::string& buffer, std::size_t at) { return little_endian(buffer.data() + at, 8); }

class ArchiveFile {
 public:
  explicit ArchiveFile(const std::filesystem::path& file) : in_(file, std::ios::binary) {
    if (in_) {
      in_.seekg(0, std::ios::end);
      size_ = static_cast<std::uint64_t>(in_.tellg());
    }
  }
  [[nodiscard]] bool is_open() const { return static_cast<bool>(in_); }
  [[nodiscard]] std::uint64_t size() const { return size_; }
  // `count` bytes at `offset`, or nullopt past the end of the file.
  std::optional<std::string> read(std::uint64_t offset, std::uint64_t count) {
    if (offset > size_ || count > size_ - offset) return std::nullopt;
    std::string bytes(count, '\0');
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(offset));
    in_.read(bytes.data(), static_cast<std::streamsize>(count));
    if (!in_) return std::nullopt;
    return bytes;
  }

 private:
  std::ifstream in_;
  std::uint64_t size_ = 0;
};

struct CentralDirectory {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

std::optional<CentralDirectory> find_central_directory(ArchiveFile& archive) {
  if (archive.size() < kEndRecordSize) return std::nullopt;
  const std::uint64_t tail_size = std::min<std::uint64_t>(archive.size(), kEndSearchBytes);
  const auto tail = archive.read(archive.size() - tail_size, tail_size);
  if (!tail) return std::nullopt;
  for (std::size_t at = tail->size() - kEndRecordSize + 1; at-- > 0;) {
    if (u32(*tail, at) != kEndOfCentralDirectory) continue;
    CentralDirectory directory{u32(*tail, at + 16), u32(*tail, at + 12)};
    const bool zip64 =
        directory.offset == kSaturated32 || directory.size == kSaturated32 || u16(*tail, at + 10) == 0xffff;
    if (zip64) {
      // The zip64 end record's locator sits just before the end record.
      const std::uint64_t end_at = archive.size() - tail_size + at;
      if (end_at < 20) return std::nullopt;
      const auto locator = archive.read(end_at - 20, 20);
      if (!locator || u32(*locator, 0) != kZip64EndLocator) return std::nullopt;
      const auto end64 = archive.read(u64(*locator, 8), 56);
      if (!end64 || u32(*end64, 0) != kZip64End) return std::nullopt;
      directory = {u64(*end64, 48), u64(*end64, 40)};
    }
    return directory;
  }
  return std::nullopt;
}

// The zip64 extra field replaces, in this order, whichever of the sizes and the offset
// are saturated in the fixed header.
void read_zip64_extra(const std::string& extra, bool size_saturated, bool compressed_saturated, bool offset_saturated,
                      std::uint64_t& size, std::uint64_t& compressed, std::uint64_t& offset) {
  for (std::size_t at = 0; at + 4 <= extra.size();) {
    const std::uint16_t id = u16(extra, at);
    const std::uint16_t length = u16(extra, at + 2);
    std::size_t field = at + 4;
    const std::size_t end = std::min(extra.size(), field + length);
    if (id == kZip64ExtraField) {
      const auto take = [&](bool saturated, std::uint64_t& value) {
        if (saturated && field + 8 <= end) {
          value = u64(extra, field);
          field += 8;
        }
      };
      take(size_saturated, size);
      take(compressed_saturated, compressed);
      take(offset_saturated, offset);
      return;
    }
    at = end;
  }
}

}  // namespace

std::optional<ZipMember> read_zip_member(const std::filesystem::path& file,
                                         const std::function<bool(std::string_view)>& wanted, std::uint64_t max_bytes) {
  ArchiveFile archive(file);
  if (!archive.is_open()) return std::nullopt;
  const auto directory = find_central_directory(archive);
  if (!directory || directory->size > kMaxCentralDirectory) return std::nullopt;
  const auto entries = archive.read(directory->offset, directory->size);
  if (!entries) return std::nullopt;
  constexpr std::size_t kHeaderSize = 46;
  for (std::size_t at = 0; at + kHeaderSize <= entries->size();) {
    if (u32(*entries, at) != kCentralHeader) return std::nullopt;
    const std::uint16_t method = u16(*entries, at + 10);
    std::uint64_t compressed = u32(*entries, at + 20);
    std::uint64_t size = u32(*entries, at + 24);
    const std::size_t name_length = u16(*entries, at + 28);
    const std::size_t extra_length = u16(*entries, at + 30);
    const std::size_t comment_length = u16(*entries, at + 32);
    std::uint64_t local_offset = u32(*entries, at + 42);
    const std::size_t next = at + kHeaderSize + name_length + extra_length + comment_length;
    if (next > entries->size()) return std::nullopt;
    const std::string name = entries->substr(at + kHeaderSize, name_length);
    if (wanted(name)) {
      read_zip64_extra(entries->substr(at + kHeaderSize + name_length, extra_length), size == kSaturated32,
                       compressed == kSaturated32, local_offset == kSaturated32, size, compressed, local_offset);
      if (method != 0) throw ZipMemberError{name, fmt::format("is compressed (method {})", method)};
      if (size > max_bytes) {
        throw ZipMemberError{name, fmt::format("holds {} bytes, more than the {} allowed", size, max_bytes)};
      }
      const auto local = archive.read(local_offset, 30);
      if (!local || u32(*local, 0) != kLocalHeader) throw ZipMemberError{name, "has no local header where listed"};
      const std::uint64_t data_at = local_offset + 30 + u16(*local, 26) + u16(*local, 28);
      auto content = archive.read(data_at, size);
      if (!content) throw ZipMemberError{name, "is cut short: the file ends inside it"};
      return ZipMember{name, std::move(*content)};
    }
    at = next;
  }
  return std::nullopt;
}

}  // namespace mgpr
