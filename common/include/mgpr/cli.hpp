#pragma once
// Command-line parsing for every mgpr program that uses CLI11. CLI11 exits with its own
// codes (105, 109, ...) on a bad option; mgpr promises kExitUsage (2) for every usage
// error, so scripts can tell "you typed it wrong" from "the job failed".
#include <CLI/CLI.hpp>

#include <optional>

#include "mgpr/exit_codes.hpp"

namespace mgpr {

// nullopt: parsed, go on. Otherwise the exit code: 0 after --help or --version,
// kExitUsage after a usage error (CLI11 has printed the message).
inline std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : kExitUsage;
  }
  return std::nullopt;
}

}  // namespace mgpr
