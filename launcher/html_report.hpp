#pragma once
// `mgpr-logs JOBID --html`: the job on one self-contained page (inline CSS and SVG, the
// quicklook as a data: URI; no JavaScript, nothing fetched), for people to look at and
// to pass around: the job, a table of its ranks, a timeline with a row per rank,
// throughput per host and device, warnings and errors with the stderr tail.
#include <string>
#include <vector>

#include "job_report.hpp"

namespace mgpr::launcher {

struct ReportImage {
  std::string path;
  std::string png;  // the file's bytes
};

// The quicklooks among the files the job's ranks wrote, read for embedding. One that
// is gone, unreadable, not a PNG or over 16 MiB is named in `notes` instead.
std::vector<ReportImage> quicklooks_of(const JobReport& job, std::vector<std::string>& notes);

// `generated`: when and by what the page was made, for its footer.
std::string html_report(const JobReport& job, const std::vector<ReportImage>& images,
                        const std::vector<std::string>& notes, const std::string& generated);

// The page's file when none is named: report.html in the job's log folder.
inline constexpr const char* kReportFileName = "report.html";

}  // namespace mgpr::launcher
