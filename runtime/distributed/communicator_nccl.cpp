// GPU collectives through NCCL's C API (the library installed beside CUDA): Debian's
// LibTorch is a CPU build, so c10d's ProcessGroupNCCL is not there to use.
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "distributed/collectives.hpp"

namespace mgpr::runtime {
namespace {

void check_cuda(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    throw std::runtime_error(
        fmt::format("{} failed: {} ({})", call, cudaGetErrorString(status), cudaGetErrorName(status)));
  }
}

void check_nccl(ncclResult_t status, const char* call, ncclComm_t comm = nullptr) {
  if (status != ncclSuccess) {
    const char* detail = ncclGetLastError(comm);
    throw std::runtime_error(fmt::format("{} failed: {}{}{}", call, ncclGetErrorString(status),
                                         detail != nullptr && *detail != '\0' ? ": " : "",
                                         detail != nullptr ? detail : ""));
  }
}

class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) {
    check_cuda(cudaMalloc(&data_, std::max<std::size_t>(bytes, 1)), "cudaMalloc");
  }
  ~DeviceBuffer() { (void)cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  [[nodiscard]] void* get() const { return data_; }

 private:
  void* data_ = nullptr;
};

class NcclCollectives final : public Collectives {
 public:
  NcclCollectives(KeyValueStore& store, int rank, int world_size, int device)
      : world_size_(world_size), device_(device) {
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    ncclUniqueId id{};
    static_assert(sizeof(id.internal) == NCCL_UNIQUE_ID_BYTES);
    if (rank == 0) {
      check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
      store.set("nccl/id", std::string(id.internal, sizeof(id.internal)));
    } else {
      const std::string shared = store.get("nccl/id");
      if (shared.size() != sizeof(id.internal)) {
        throw std::runtime_error(
            fmt::format("the NCCL id rank 0 shared has {} bytes, not {}: ranks built against "
                        "different NCCL versions?",
                        shared.size(), sizeof(id.internal)));
      }
      std::memcpy(id.internal, shared.data(), sizeof(id.internal));
    }
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    try {
      check_nccl(ncclCommInitRank(&comm_, world_size, id, rank), "ncclCommInitRank");
    } catch (...) {
      (void)cudaStreamDestroy(stream_);
      throw;
    }
  }
  ~NcclCollectives() override {
    (void)cudaSetDevice(device_);
    (void)ncclCommDestroy(comm_);
    (void)cudaStreamDestroy(stream_);
  }
  NcclCollectives(const NcclCollectives&) = delete;
  NcclCollectives& operator=(const NcclCollectives&) = delete;

  // NCCL has no barrier: an all-reduce of one number is one.
  void barrier() override {
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    const DeviceBuffer one(sizeof(int));
    check_cuda(cudaMemsetAsync(one.get(), 0, sizeof(int), stream_), "cudaMemsetAsync");
    check_nccl(ncclAllReduce(one.get(), one.get(), 1, ncclInt32, ncclSum, comm_, stream_), "ncclAllReduce", comm_);
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }

  // Lengths first, then the bytes padded to the longest, as ncclAllGather needs equal counts.
  std::vector<std::string> all_gather(const std::string& bytes) override {
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    const auto world = static_cast<std::size_t>(world_size_);
    const std::int64_t length = static_cast<std::int64_t>(bytes.size());
    std::vector<std::int64_t> lengths(world);
    {
      const DeviceBuffer in(sizeof(std::int64_t));
      const DeviceBuffer out(sizeof(std::int64_t) * world);
      check_cuda(cudaMemcpyAsync(in.get(), &length, sizeof(length), cudaMemcpyHostToDevice, stream_),
                 "cudaMemcpyAsync");
      check_nccl(ncclAllGather(in.get(), out.get(), 1, ncclInt64, comm_, stream_), "ncclAllGather", comm_);
      check_cuda(
          cudaMemcpyAsync(lengths.data(), out.get(), sizeof(std::int64_t) * world, cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpyAsync");
      check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    }
    const auto padded =
        static_cast<std::size_t>(std::max<std::int64_t>(1, *std::max_element(lengths.begin(), lengths.end())));
    std::vector<char> host_in(padded, 0);
    std::memcpy(host_in.data(), bytes.data(), bytes.size());
    std::vector<char> host_out(padded * world);
    const DeviceBuffer in(padded);
    const DeviceBuffer out(padded * world);
    check_cuda(cudaMemcpyAsync(in.get(), host_in.data(), padded, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync");
    check_nccl(ncclAllGather(in.get(), out.get(), padded, ncclUint8, comm_, stream_), "ncclAllGather", comm_);
    check_cuda(cudaMemcpyAsync(host_out.data(), out.get(), padded * world, cudaMemcpyDeviceToHost, stream_),
               "cudaMemcpyAsync");
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");

    std::vector<std::string> gathered;
    for (std::size_t r = 0; r < world; ++r) {
      gathered.emplace_back(host_out.data() + r * padded, static_cast<std::size_t>(lengths[r]));
    }
    return gathered;
  }

 private:
  int world_size_;
  int device_;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
};

}  // namespace

std::unique_ptr<Collectives> make_nccl_collectives(KeyValueStore& store, int rank, int world_size, int device_index) {
  try {
    return std::make_unique<NcclCollectives>(store, rank, world_size, device_index);
  } catch (const std::exception& error) {
    throw std::runtime_error(fmt::format("rank {}: the NCCL communicator on CUDA device {} could not be set up: {}",
                                         rank, device_index, error.what()));
  }
}

}  // namespace mgpr::runtime
