#include "job_state.hpp"

#include <charconv>
#include <sstream>
#include <vector>

#include "run_command.hpp"

namespace mgpr::launcher {
namespace {

std::optional<JobState> from_scontrol(const std::string& job_id) {
  const auto result = run_command({"scontrol", "show", "job", "-o", job_id});
  if (result.exit_code != 0) return std::nullopt;
  JobState state;
  state.source = "scontrol";
  std::istringstream fields(result.out);
  std::string field;
  bool have_state = false;
  while (fields >> field) {
    if (field.starts_with("JobState=")) {
      state.state = field.substr(9);
      have_state = true;
    } else if (field.starts_with("ExitCode=")) {
      parse_exit_code(std::string_view(field).substr(9), state.exit_code, state.signal);
    }
  }
  if (!have_state) return std::nullopt;
  return state;
}

// `sacct -P -n -o JobID,State,ExitCode`: the first line is the job itself.
std::optional<JobState> from_sacct(const std::string& job_id, bool completion_log) {
  std::vector<std::string> argv{"sacct"};
  if (completion_log) argv.emplace_back("-c");
  for (const char* arg : {"-P", "-n", "-X", "-o", "JobID,State,ExitCode", "-j"}) argv.emplace_back(arg);
  argv.push_back(job_id);
  const auto result = run_command(argv);
  if (result.exit_code != 0) return std::nullopt;
  std::istringstream lines(result.out);
  std::string line;
  std::optional<JobState> found;
  while (std::getline(lines, line)) {
    std::vector<std::string> parts;
    std::istringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, '|')) parts.push_back(cell);
    if (parts.size() < 3 || parts[0] != job_id) continue;
    JobState state;
    state.source = completion_log ? "sacct -c" : "sacct";
    state.state = parts[1].substr(0, parts[1].find(' '));  // "CANCELLED by 0" -> CANCELLED
    parse_exit_code(parts[2], state.exit_code, state.signal);
    found = state;  // a requeued job has several records: the last is the newest
  }
  return found;
}

}  // namespace

bool JobState::finished() const {
  return state != "PENDING" && state != "RUNNING" && state != "CONFIGURING" && state != "COMPLETING" &&
         state != "REQUEUED" && state != "SUSPENDED" && state != "RESIZING" && !state.empty();
}

bool parse_exit_code(std::string_view text, int& code, int& signal) {
  const auto colon = text.find(':');
  const auto code_text = text.substr(0, colon);
  const auto [p1, e1] = std::from_chars(code_text.data(), code_text.data() + code_text.size(), code);
  if (e1 != std::errc()) return false;
  signal = 0;
  if (colon != std::string_view::npos) {
    const auto signal_text = text.substr(colon + 1);
    std::from_chars(signal_text.data(), signal_text.data() + signal_text.size(), signal);
  }
  return true;
}

std::optional<JobState> query_job_state(const std::string& job_id) {
  if (auto state = from_scontrol(job_id)) return state;
  if (auto state = from_sacct(job_id, false)) return state;
  return from_sacct(job_id, true);
}

}  // namespace mgpr::launcher
