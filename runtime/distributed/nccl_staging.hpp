#pragma once
// The memory NCCL's collectives stage their bytes in (communicator_nccl.cpp), kept across
// collectives so that nothing waits on the GPU without a deadline: cudaFree and
// cudaFreeHost wait for the whole device, so freeing after each collective would wait,
// with no deadline, for one whose peer never came. The buffers hold as much as the
// largest collective so far (the gather of every rank's results, at a run's end) until
// the communicator goes, which is when the run ends. Only NCCL builds include this.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <cstddef>
#include <stdexcept>

#include "distributed/deadline_poll.hpp"
#include "distributed/nccl_checks.hpp"

namespace mgpr::runtime::nccl_staging {

inline void check_cuda(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    throw std::runtime_error(
        fmt::format("{} failed: {} ({})", call, cudaGetErrorString(status), cudaGetErrorName(status)));
  }
}

struct DeviceMemory {
  static constexpr const char* kAllocate = "cudaMalloc";
  static cudaError_t allocate(void** data, std::size_t bytes) { return cudaMalloc(data, bytes); }
  static void release(void* data) noexcept { (void)cudaFree(data); }
};

struct PinnedHostMemory {
  static constexpr const char* kAllocate = "cudaHostAlloc";
  static cudaError_t allocate(void** data, std::size_t bytes) {
    return cudaHostAlloc(data, bytes, cudaHostAllocDefault);
  }
  static void release(void* data) noexcept { (void)cudaFreeHost(data); }
};

// Memory a collective stages its bytes in, kept across collectives (above). Grows as
// staging_capacity says.
template <class Memory>
class StagingBuffer {
 public:
  StagingBuffer() = default;
  ~StagingBuffer() {
    if (data_ != nullptr) Memory::release(data_);
  }
  StagingBuffer(const StagingBuffer&) = delete;
  StagingBuffer& operator=(const StagingBuffer&) = delete;

  // Only while no collective is pending: freeing the old buffer waits for the device.
  void reserve(std::size_t needed) {
    if (needed <= capacity_) return;
    const std::size_t grown = staging_capacity(capacity_, needed);
    if (data_ != nullptr) Memory::release(data_);
    data_ = nullptr;
    capacity_ = 0;
    void* fresh = nullptr;
    check_cuda(Memory::allocate(&fresh, grown), Memory::kAllocate);
    data_ = fresh;
    capacity_ = grown;
  }
  // Gives the memory up without freeing it, for when a kernel may still use it.
  void leak() noexcept {
    data_ = nullptr;
    capacity_ = 0;
  }
  [[nodiscard]] void* get() const { return data_; }
  [[nodiscard]] char* bytes() const { return static_cast<char*>(data_); }

 private:
  void* data_ = nullptr;
  std::size_t capacity_ = 0;
};

// A stream drained up to its last recorded event; abort has nothing to give up.
class StreamDrain final : public PendingOperation {
 public:
  explicit StreamDrain(cudaEvent_t event) : event_(event) {}
  OperationStatus poll() override {
    const auto passed = cudaEventQuery(event_);
    if (passed == cudaErrorNotReady) return {};
    if (passed != cudaSuccess) return {OperationState::kFailed, cudaGetErrorName(passed)};
    return {OperationState::kDone, {}};
  }
  void abort() noexcept override {}

 private:
  cudaEvent_t event_;
};

}  // namespace mgpr::runtime::nccl_staging
