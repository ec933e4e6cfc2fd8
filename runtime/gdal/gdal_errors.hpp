#pragma once
// GDAL reports failures through a process-wide handler and a per-thread "last error".
// Every part of the runtime that calls GDAL turns them into its own exceptions, in
// GDAL's own words, the same way.
#include <string>
#include <string_view>

namespace mgpr::runtime {

// While alive, GDAL's failures go only into the caller's exception, not also onto
// stderr without the fix; warnings print (kShown) or not (kQuiet). Clears the last
// error, so a message read afterwards is from this scope's calls.
class GdalErrorScope {
 public:
  enum class Warnings { kShown, kQuiet };
  explicit GdalErrorScope(Warnings warnings);
  ~GdalErrorScope();
  GdalErrorScope(const GdalErrorScope&) = delete;
  GdalErrorScope& operator=(const GdalErrorScope&) = delete;
};

// GDAL's last error message on this thread, or `fallback` when it gave none.
std::string gdal_last_error(std::string_view fallback);

}  // namespace mgpr::runtime
