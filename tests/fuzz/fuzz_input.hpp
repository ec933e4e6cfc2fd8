#pragma once
// What every target shares: the input as text, and the rule that bad input may throw
// (with a message, which is the point) but never crash, leak or hit undefined behaviour.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace mgpr::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Runs `parse`; an exception is the parser refusing the input, as it should.
template <class Parse>
void refusing_is_fine(Parse&& parse) {
  try {
    parse();
  } catch (const std::exception& error) {
    // The message is what users read: building it must be safe too.
    static_cast<void>(std::string(error.what()).size());
  }
}

// Runs `parse` where the one refusal the parser's callers expect is `Refusal` (a
// UsageError, whose message users read, with exit 2): any other exception escapes, and
// libFuzzer reports it, since the program would end with a message that names no input.
template <class Refusal, class Parse>
void refusing_only_with(Parse&& parse) {
  try {
    parse();
  } catch (const Refusal& error) {
    if constexpr (requires { error.what(); }) static_cast<void>(std::string(error.what()).size());
  }
}

// The input as a file, for parsers that take a path: one file per process, in a folder of
// its own under $TMPDIR (so a relative path in it names nothing else), written again for
// every input; libFuzzer runs the inputs of a process one after another.
class InputFile {
 public:
  explicit InputFile(const std::string& name) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/mgpr-fuzz-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    folder_ = pattern;
    path_ = folder_ / name;
  }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile() {
    std::error_code ignored;
    std::filesystem::remove_all(folder_, ignored);
  }

  const std::filesystem::path& write(const std::uint8_t* data, std::size_t size) {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    out.close();
    if (!out) std::abort();  // a full /tmp, not a finding: say so loudly rather than fuzz nothing
    return path_;
  }

 private:
  std::filesystem::path folder_;
  std::filesystem::path path_;
};

// Splits at newlines: one override, argument or line per line.
inline std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto end = text.find('\n', start);
    lines.emplace_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return lines;
}

}  // namespace mgpr::fuzz
