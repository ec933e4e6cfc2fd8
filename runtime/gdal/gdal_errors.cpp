#include "gdal/gdal_errors.hpp"

#include <cpl_error.h>

namespace mgpr::runtime {
namespace {

void CPL_STDCALL warnings_only(CPLErr level, CPLErrorNum number, const char* message) {
  if (level < CE_Failure) CPLDefaultErrorHandler(level, number, message);
}

}  // namespace

GdalErrorScope::GdalErrorScope(Warnings warnings) {
  CPLPushErrorHandler(warnings == Warnings::kQuiet ? CPLQuietErrorHandler : warnings_only);
  CPLErrorReset();
}

GdalErrorScope::~GdalErrorScope() { CPLPopErrorHandler(); }

std::string gdal_last_error(std::string_view fallback) {
  std::string message = CPLGetLastErrorMsg();
  return message.empty() ? std::string(fallback) : message;
}

}  // namespace mgpr::runtime
