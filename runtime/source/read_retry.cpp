#include "source/read_retry.hpp"

#include "source/read_error.hpp"

#include <cpl_conv.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gdal/remote_reads.hpp"
#include "mgpr/error.hpp"

namespace mgpr::runtime {
namespace {

double config_number(const char* key, double fallback) {
  const char* text = CPLGetConfigOption(key, nullptr);
  if (text == nullptr) return fallback;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  return end != text && std::isfinite(value) && value >= 0 ? value : fallback;
}

class RetryingReader final : public TileReader {
 public:
  RetryingReader(std::unique_ptr<RasterReader> reader, std::span<const RasterReadPlan> plans, ReadRetryPolicy policy)
      : reader_(std::move(reader)), plans_(plans), policy_(policy) {
    remote_.reserve(plans.size());
    for (const auto& plan : plans) remote_.push_back(is_remote_path(plan.path));
  }

  void read(const Tile& tile, TileData& out) override {
    const auto image = static_cast<std::size_t>(tile.id.image);
    if (image >= remote_.size() || !remote_[image]) {
      reader_->read(tile, out);
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    double delay_s = policy_.first_delay_s;
    for (int attempt = 1;; ++attempt) {
      try {
        reader_->read(tile, out);
        return;
      } catch (const UsageError&) {
        throw;
      } catch (const std::runtime_error& failure) {
        const auto& path = plans_[image].path;
        if (attempt >= policy_.attempts) {
          const double spent_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          throw RasterReadError(
              fmt::format("remote raster '{}' could not be read: {} tries over {:.1f} s failed (the server down, the "
                          "connection lost or the answers cut short); check that the URL answers and run the same "
                          "command again: the finished tiles are kept and the run resumes. Last failure: {}",
                          shown_remote_path(path), attempt, spent_s, redact_secrets(failure.what())));
        }
        // A cached short answer or a dead connection would fail the next try alike.
        reader_->close(tile.id.image);
        forget_remote_file(path);
        std::this_thread::sleep_for(std::chrono::duration<double>(delay_s));
        delay_s = std::min(delay_s * 2, policy_.max_delay_s);
      }
    }
  }

 private:
  std::unique_ptr<RasterReader> reader_;
  std::span<const RasterReadPlan> plans_;
  ReadRetryPolicy policy_;
  std::vector<bool> remote_;  // per image
};

}  // namespace

ReadRetryPolicy read_retry_policy() {
  ReadRetryPolicy policy;
  policy.attempts = 1 + static_cast<int>(std::min(config_number("GDAL_HTTP_MAX_RETRY", 5), 100.0));
  policy.first_delay_s = std::min(config_number("GDAL_HTTP_RETRY_DELAY", 1), policy.max_delay_s);
  return policy;
}

std::unique_ptr<TileReader> with_read_retries(std::unique_ptr<RasterReader> reader,
                                              std::span<const RasterReadPlan> plans, const ReadRetryPolicy& policy) {
  const bool any_remote =
      std::any_of(plans.begin(), plans.end(), [](const auto& plan) { return is_remote_path(plan.path); });
  if (!any_remote) return reader;
  return std::make_unique<RetryingReader>(std::move(reader), plans, policy);
}

}  // namespace mgpr::runtime
