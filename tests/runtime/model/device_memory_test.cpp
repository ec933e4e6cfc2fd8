// A GPU's memory sample is asked on the rank's device, whatever thread samples it: the
// driver's free/total figures are the calling thread's current device's, and the
// pipeline samples from its post-processing thread, which never chose a device. CUDA's
// per-thread current device is played by a fake here, so this runs without a GPU
// (tests/gpu/cuda_device_test.cpp does the same on a real one).
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <thread>

#include "model/cuda_backend.hpp"
#include "model/device_memory.hpp"

namespace {

namespace rt = mgpr::runtime;
namespace cb = mgpr::runtime::cuda_backend;

// CUDA's current device is per thread, and 0 in a thread that never set one.
thread_local c10::DeviceIndex current_device = 0;

// Device d's card: (d + 1) x 10 GiB, a tenth of it free.
constexpr std::int64_t kGiB = 1LL << 30;
cb::CardBytes card_of(c10::DeviceIndex device) { return {(device + 1) * kGiB, (device + 1) * 10 * kGiB}; }

class FakeQueries final : public cb::MemoryQueries {
 public:
  std::unique_ptr<cb::CurrentDeviceScope> make_current(c10::DeviceIndex device_index) override {
    class Scope final : public cb::CurrentDeviceScope {
     public:
      explicit Scope(c10::DeviceIndex device) : previous_(current_device) { current_device = device; }
      ~Scope() override { current_device = previous_; }
      Scope(const Scope&) = delete;
      Scope& operator=(const Scope&) = delete;

     private:
      c10::DeviceIndex previous_;
    };
    return std::make_unique<Scope>(device_index);
  }

  cb::AllocatorBytes allocator_bytes(c10::DeviceIndex device_index) override {
    allocator_asked_for = device_index;
    return {device_index * 100LL, device_index * 200LL};
  }

  std::optional<cb::CardBytes> current_card_bytes() override {
    card_asked_on = current_device;
    if (driver_silent) return std::nullopt;
    return card_of(current_device);
  }

  std::optional<c10::DeviceIndex> allocator_asked_for;
  std::optional<c10::DeviceIndex> card_asked_on;
  bool driver_silent = false;
};

struct Seen {
  rt::MemorySample sample;
  c10::DeviceIndex current_after = -1;
};

// Samples `device` from a fresh thread whose current device is `thread_device`.
Seen sample_from_another_thread(FakeQueries& queries, c10::DeviceIndex device, c10::DeviceIndex thread_device) {
  Seen seen;
  std::thread sampler([&] {
    current_device = thread_device;
    seen.sample = rt::sample_gpu_memory(queries, device);
    seen.current_after = current_device;
  });
  sampler.join();
  return seen;
}

TEST(DeviceMemory, TheCardIsAskedOnTheRanksDeviceAndTheThreadKeepsItsOwn) {
  FakeQueries queries;
  const auto seen = sample_from_another_thread(queries, 3, 0);
  EXPECT_EQ(queries.card_asked_on, 3) << "the driver was asked on another device than the rank's";
  EXPECT_EQ(queries.allocator_asked_for, 3);
  EXPECT_EQ(seen.current_after, 0) << "sampling changed the sampling thread's current device";
  EXPECT_EQ(seen.sample.total_bytes, card_of(3).total);
  EXPECT_EQ(seen.sample.device_used_bytes, card_of(3).total - card_of(3).free);
  EXPECT_EQ(seen.sample.current_bytes, 300);
  EXPECT_EQ(seen.sample.peak_bytes, 600);
  EXPECT_EQ(current_device, 0) << "the test's own thread was touched";
}

TEST(DeviceMemory, AThreadThatChoseAnotherDeviceGetsItBack) {
  FakeQueries queries;
  const auto seen = sample_from_another_thread(queries, 1, 2);
  EXPECT_EQ(queries.card_asked_on, 1);
  EXPECT_EQ(seen.current_after, 2);
  EXPECT_EQ(seen.sample.total_bytes, card_of(1).total);
}

TEST(DeviceMemory, ADriverThatWillNotSayLeavesTheCardsFiguresAtZero) {
  FakeQueries queries;
  queries.driver_silent = true;
  const auto seen = sample_from_another_thread(queries, 2, 0);
  EXPECT_EQ(queries.card_asked_on, 2);
  EXPECT_EQ(seen.current_after, 0);
  EXPECT_EQ(seen.sample.total_bytes, 0);
  EXPECT_EQ(seen.sample.device_used_bytes, 0);
  EXPECT_EQ(seen.sample.current_bytes, 200) << "the allocator's figures do not depend on the driver's";
}

}  // namespace
