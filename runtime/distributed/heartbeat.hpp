#pragma once
// Reports to the SPANK plugin's watchdog through MGPR_PROGRESS_FILE (docs/spank.md):
// the file's existence says "this rank reached rendezvous", its modification time "it
// is still making progress", its content "finished" that it waits for its peers. Best effort: a report that cannot be
// written is ignored, because the folder may already be gone as the step ends.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace mgpr::runtime {

class Heartbeat {
 public:
  // Reports to MGPR_PROGRESS_FILE; inactive (every call a no-op) when it is unset or empty.
  static Heartbeat from_environment();
  // `path` empty: inactive. Touches at most once per `min_interval`.
  explicit Heartbeat(std::string path, std::chrono::milliseconds min_interval = std::chrono::seconds(1));
  Heartbeat(const Heartbeat& other);
  Heartbeat& operator=(const Heartbeat&) = delete;

  [[nodiscard]] bool active() const { return !path_.empty(); }
  [[nodiscard]] const std::string& path() const { return path_; }

  // Creates the file (or empties and refreshes it): the rank reached rendezvous.
  void arrived() noexcept;
  // Writes "finished" into the file: the rank has done its share and from now on waits
  // for its peers, which the watchdog must not take for a stall. No file, no claim.
  void finished() noexcept;
  // Touches the file unless that was done less than min_interval ago. Thread-safe and
  // cheap enough to call for every tile.
  void progress() noexcept;

 private:
  std::string path_;
  std::chrono::milliseconds min_interval_;
  std::atomic<std::int64_t> last_touch_ns_{0};  // steady clock; 0: never
};

}  // namespace mgpr::runtime
