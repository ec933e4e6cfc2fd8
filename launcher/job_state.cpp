#include "job_state.hpp"

#include <algorithm>
#include <array>
#include <sstream>
#include <vector>

#include "mgpr/process.hpp"
#include "mgpr/text.hpp"

namespace mgpr::launcher {
namespace {

std::optional<JobState> from_scontrol(const std::string& job_id) {
  const auto result = run_command({"scontrol", "show", "job", "-o", job_id});
  if (result.exit_code != 0) return std::nullopt;
  return parse_scontrol_job(result.out);
}

std::optional<JobState> from_sacct(const std::string& job_id, bool completion_log) {
  std::vector<std::string> argv{"sacct"};
  if (completion_log) argv.emplace_back("-c");
  for (const char* arg : {"-P", "-n", "-X", "-o", "JobID,State,ExitCode", "-j"}) argv.emplace_back(arg);
  argv.push_back(job_id);
  const auto result = run_command(argv);
  if (result.exit_code != 0) return std::nullopt;
  return parse_sacct_records(result.out, job_id, completion_log ? "sacct -c" : "sacct");
}

}  // namespace

std::optional<JobState> parse_scontrol_job(std::string_view text) {
  JobState state;
  state.source = "scontrol";
  std::istringstream fields{std::string(text)};
  std::string field;
  bool have_state = false;
  while (fields >> field) {
    if (field.starts_with("JobState=")) {
      state.state = field.substr(9);
      have_state = true;
    } else if (field.starts_with("ExitCode=")) {
      parse_exit_code(std::string_view(field).substr(9), state.exit_code, state.signal);
    } else if (field.starts_with("Restarts=")) {
      state.restarts = parse_number<int>(std::string_view(field).substr(9)).value_or(0);
    }
  }
  if (!have_state) return std::nullopt;
  return state;
}

std::optional<JobState> parse_sacct_records(std::string_view text, std::string_view job_id, std::string source) {
  std::istringstream lines{std::string(text)};
  std::string line;
  std::optional<JobState> found;
  while (std::getline(lines, line)) {
    std::vector<std::string> parts;
    std::istringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, '|')) parts.push_back(cell);
    if (parts.size() < 3 || parts[0] != job_id) continue;
    JobState state;
    state.source = source;
    state.state = parts[1].substr(0, parts[1].find(' '));  // "CANCELLED by 0" -> CANCELLED
    parse_exit_code(parts[2], state.exit_code, state.signal);
    // A requeued job can have several records (jobcomp/filetxt: each run's end and a
    // PENDING one per requeue): the last is the newest. They are not a restart count,
    // and sacct has no such field, so restarts stay 0 here: only scontrol reports them.
    found = state;
  }
  return found;
}

bool JobState::finished() const {
  // The terminal states, listed rather than the live ones: Slurm shows passing states
  // too (SIGNALING while --signal's warning is delivered, STAGE_OUT, REQUEUE_FED, ...),
  // and a running job taken for ended makes --wait and the tests stop too early.
  static constexpr std::array<std::string_view, 11> kEnded{"COMPLETED", "FAILED",    "CANCELLED",   "TIMEOUT",
                                                           "NODE_FAIL", "PREEMPTED", "BOOT_FAIL",   "OUT_OF_MEMORY",
                                                           "DEADLINE",  "REVOKED",   "SPECIAL_EXIT"};
  return std::find(kEnded.begin(), kEnded.end(), state) != kEnded.end();
}

bool parse_exit_code(std::string_view text, int& code, int& signal) {
  const auto colon = text.find(':');
  const auto code_text = text.substr(0, colon);
  const auto parsed_code = parse_number<int>(code_text);
  if (!parsed_code) return false;
  code = *parsed_code;
  signal = colon == std::string_view::npos ? 0 : parse_number<int>(text.substr(colon + 1)).value_or(0);
  return true;
}

std::optional<JobState> query_job_state(const std::string& job_id) {
  if (auto state = from_scontrol(job_id)) return state;
  if (auto state = from_sacct(job_id, false)) return state;
  return from_sacct(job_id, true);
}

}  // namespace mgpr::launcher
