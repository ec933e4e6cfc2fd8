#pragma once
// The plugin's findings, one line each, in <MGPR_LOG_DIR>/diagnoses.log, where
// mgpr-logs shows them after the job (JobLogLayout::diagnoses()).
#include <ctime>
#include <filesystem>
#include <string>
#include <string_view>

#include "as_job_user.hpp"

namespace mgpr::spank {

// "2024-05-01T12:00:00Z mgpr: <message>", newlines in the message flattened so one
// finding stays one line.
std::string diagnosis_line(std::time_t when, std::string_view message);

// Appends one line to <log_dir>/diagnoses.log as the job's user (as_job_user.hpp),
// creating the folder. Throws UserFileError naming the file on failure.
void append_diagnosis(const JobUser& user, const std::filesystem::path& log_dir, std::string_view message);

}  // namespace mgpr::spank
