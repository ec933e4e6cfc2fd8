// The CUDA seam of a LibTorch built for CUDA: the only file of the runtime that includes
// LibTorch's CUDA headers.
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "model/cuda_backend.hpp"

namespace mgpr::runtime::cuda_backend {
namespace {

class EventTimer final : public StreamTimer {
 public:
  explicit EventTimer(c10::DeviceIndex device_index) : device_index_(device_index) {}
  void record_begin() override { began_.record(c10::cuda::getCurrentCUDAStream(device_index_)); }
  void record_end() override { ended_.record(c10::cuda::getCurrentCUDAStream(device_index_)); }
  double seconds() override {
    ended_.synchronize();
    return static_cast<double>(began_.elapsed_time(ended_)) / 1000.0;
  }

 private:
  c10::DeviceIndex device_index_;
  at::cuda::CUDAEvent began_{cudaEventDefault};
  at::cuda::CUDAEvent ended_{cudaEventDefault};
};

class PoolCopyStream final : public CopyStream {
 public:
  explicit PoolCopyStream(c10::DeviceIndex device_index)
      : device_index_(device_index), stream_(c10::cuda::getStreamFromPool(false, device_index)) {}

  torch::Tensor start(const torch::Tensor& host_batch) override {
    const c10::cuda::CUDAStreamGuard on_copy_stream(stream_);
    // From pinned memory, non_blocking is a DMA queued on the copy stream; LibTorch's
    // host allocator keeps the pinned block from reuse until that copy has finished.
    auto on_device =
        host_batch.to(torch::Device(torch::kCUDA, device_index_), host_batch.scalar_type(), /*non_blocking=*/true);
    copied_.record(stream_);
    return on_device;
  }

  void hand_over(torch::Tensor& batch) override {
    const auto compute = c10::cuda::getCurrentCUDAStream(device_index_);
    copied_.block(compute);
    // Allocated on the copy stream but used on the compute stream: without this the
    // caching allocator could hand the memory to the next copy while the model reads it.
    batch.record_stream(compute);
  }

 private:
  c10::DeviceIndex device_index_;
  c10::cuda::CUDAStream stream_;
  at::cuda::CUDAEvent copied_;  // timing disabled: the cheapest event kind
};

class GuardScope final : public CurrentDeviceScope {
 public:
  explicit GuardScope(c10::DeviceIndex device_index) : guard_(device_index) {}

 private:
  // Restores the thread's device only where that device already has a context: a thread
  // that never chose one must not get device 0's context from the restore.
  c10::cuda::CUDAGuard guard_;
};

class RuntimeMemoryQueries final : public MemoryQueries {
 public:
  std::unique_ptr<CurrentDeviceScope> make_current(c10::DeviceIndex device_index) override {
    return std::make_unique<GuardScope>(device_index);
  }

  AllocatorBytes allocator_bytes(c10::DeviceIndex device_index) override {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device_index);
    const auto& allocated = stats.allocated_bytes[0];  // aggregate over pool kinds
    return {allocated.current, allocated.peak};
  }

  std::optional<CardBytes> current_card_bytes() override {
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
      (void)cudaGetLastError();  // not left for the next CUDA call to report as its own
      return std::nullopt;
    }
    return CardBytes{static_cast<std::int64_t>(free_bytes), static_cast<std::int64_t>(total_bytes)};
  }
};

}  // namespace

MemoryQueries& memory_queries() {
  static RuntimeMemoryQueries queries;
  return queries;
}

std::string product_name(c10::DeviceIndex device_index) { return at::cuda::getDeviceProperties(device_index)->name; }

int compute_capability(c10::DeviceIndex device_index) {
  const auto* properties = at::cuda::getDeviceProperties(device_index);
  return properties->major * 10 + properties->minor;
}

std::string device_uuid(c10::DeviceIndex device_index) {
  const auto& bytes = at::cuda::getDeviceProperties(device_index)->uuid.bytes;
  std::string hex;
  for (const char byte : bytes) hex += fmt::format("{:02x}", static_cast<unsigned char>(byte));
  // nvidia-smi's grouping: 8-4-4-4-12 hex digits.
  return fmt::format("GPU-{}-{}-{}-{}-{}", hex.substr(0, 8), hex.substr(8, 4), hex.substr(12, 4), hex.substr(16, 4),
                     hex.substr(20));
}

std::unique_ptr<StreamTimer> make_stream_timer(c10::DeviceIndex device_index) {
  return std::make_unique<EventTimer>(device_index);
}

std::unique_ptr<CopyStream> make_copy_stream(c10::DeviceIndex device_index) {
  return std::make_unique<PoolCopyStream>(device_index);
}

namespace {

class StreamCurrent final : public ComputeStream::Current {
 public:
  explicit StreamCurrent(c10::cuda::CUDAStream stream) : guard_(stream) {}

 private:
  c10::cuda::CUDAStreamGuard guard_;  // sets the stream's device too, and gives both back
};

class PoolComputeStream final : public ComputeStream {
 public:
  explicit PoolComputeStream(c10::DeviceIndex device_index)
      : stream_(c10::cuda::getStreamFromPool(false, device_index)) {}
  std::unique_ptr<Current> make_current() override { return std::make_unique<StreamCurrent>(stream_); }

 private:
  c10::cuda::CUDAStream stream_;
};

}  // namespace

std::unique_ptr<ComputeStream> make_compute_stream(c10::DeviceIndex device_index) {
  return std::make_unique<PoolComputeStream>(device_index);
}

}  // namespace mgpr::runtime::cuda_backend
