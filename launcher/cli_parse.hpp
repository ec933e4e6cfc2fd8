#pragma once
// Command-line parsing for mgpr-submit and mgpr-logs. CLI11 exits with its own codes
// (105, 109, ...) on a bad option; the launcher promises 2 for every usage error, so
// scripts can tell "you typed it wrong" from "the job failed".
#include <CLI/CLI.hpp>

#include <optional>

namespace mgpr::launcher {

inline constexpr int kUsageExit = 2;

// nullopt: parsed, go on. Otherwise the exit code: 0 after --help or --version, 2 after
// a usage error (CLI11 has printed the message).
inline std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : kUsageExit;
  }
  return std::nullopt;
}

}  // namespace mgpr::launcher
