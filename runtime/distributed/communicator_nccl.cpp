// GPU collectives through NCCL's C API (the library installed beside CUDA): Debian's
// LibTorch is a CPU build, so c10d's ProcessGroupNCCL is not there to use. The
// communicator is non-blocking: creation and every collective return at once and are
// polled to a deadline (deadline_poll.hpp), so a rank that died or a network the GPUs
// cannot cross ends in a message naming who held it up, not in a hang.
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "distributed/collectives.hpp"
#include "distributed/deadline_poll.hpp"
#include "distributed/nccl_checks.hpp"
#include "mgpr/error.hpp"

namespace mgpr::runtime {
namespace {

// Rank 0's answer under kSetupKey: kIdTag and the unique id, or kRefusedTag and why.
constexpr const char* kSetupKey = "nccl/setup";
constexpr char kIdTag = 'i';
constexpr char kRefusedTag = 'x';

std::string version_key(int rank) { return fmt::format("nccl/version/{}", rank); }

void check_cuda(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    throw std::runtime_error(
        fmt::format("{} failed: {} ({})", call, cudaGetErrorString(status), cudaGetErrorName(status)));
  }
}

std::string nccl_error_text(ncclResult_t status, ncclComm_t comm) {
  const char* detail = ncclGetLastError(comm);
  return fmt::format("{}{}{}", ncclGetErrorString(status), detail != nullptr && *detail != '\0' ? ": " : "",
                     detail != nullptr ? detail : "");
}

void check_nccl(ncclResult_t status, const char* call, ncclComm_t comm = nullptr) {
  if (status != ncclSuccess && status != ncclInProgress) {
    throw std::runtime_error(fmt::format("{} failed: {}", call, nccl_error_text(status, comm)));
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

// The communicator's own work (creation, finalizing): done when its async state leaves
// ncclInProgress. With `event`, a collective: done when the stream has passed the event.
class NcclOperation final : public PendingOperation {
 public:
  NcclOperation(ncclComm_t comm, cudaEvent_t event, bool& aborted) : comm_(comm), event_(event), aborted_(aborted) {}
  OperationStatus poll() override {
    ncclResult_t state = ncclSuccess;
    if (const auto asked = ncclCommGetAsyncError(comm_, &state); asked != ncclSuccess) state = asked;
    if (state == ncclInProgress) return {};
    if (state != ncclSuccess) return {OperationState::kFailed, nccl_error_text(state, comm_)};
    if (event_ == nullptr) return {OperationState::kDone, {}};
    const auto passed = cudaEventQuery(event_);
    if (passed == cudaErrorNotReady) return {};
    if (passed != cudaSuccess) {
      return {OperationState::kFailed, fmt::format("{} ({})", cudaGetErrorString(passed), cudaGetErrorName(passed))};
    }
    return {OperationState::kDone, {}};
  }
  void abort() noexcept override {
    (void)ncclCommAbort(comm_);
    aborted_ = true;
  }

 private:
  ncclComm_t comm_;
  cudaEvent_t event_;
  bool& aborted_;
};

class NcclCollectives final : public Collectives {
 public:
  NcclCollectives(KeyValueStore& store, const NcclSetup& setup) : store_(store), setup_(setup) {
    check_cuda(cudaSetDevice(setup_.device_index), "cudaSetDevice");
    const ncclUniqueId id = agree_on_setup();
    try {
      check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
      check_cuda(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = 0;  // every call returns at once; ncclCommGetAsyncError says when it is done
      store_.set(step_key("init"), "");
      check_nccl(ncclCommInitRankConfig(&comm_, setup_.world_size, id, setup_.rank, &config), "ncclCommInitRankConfig");
      await("NCCL communicator creation", "init", nullptr);
    } catch (...) {
      if (comm_ != nullptr && !aborted_) (void)ncclCommAbort(comm_);
      release_stream();
      throw;
    }
  }
  ~NcclCollectives() override {
    (void)cudaSetDevice(setup_.device_index);
    if (comm_ != nullptr && !aborted_) {
      // Finalizing waits for the peers' last messages: a peer gone by now must not hold this rank.
      try {
        check_nccl(ncclCommFinalize(comm_), "ncclCommFinalize", comm_);
        NcclOperation finalizing(comm_, nullptr, aborted_);
        await_with_deadline(finalizing, {setup_.rank, "NCCL finalize", setup_.timeout}, {});
        (void)ncclCommDestroy(comm_);
      } catch (const std::exception&) {
        if (!aborted_) (void)ncclCommAbort(comm_);
      }
    }
    release_stream();
  }
  NcclCollectives(const NcclCollectives&) = delete;
  NcclCollectives& operator=(const NcclCollectives&) = delete;

  // NCCL has no barrier: an all-reduce of one number is one.
  void barrier() override {
    const auto step = begin("barrier");
    const DeviceBuffer one(sizeof(int));
    check_cuda(cudaMemsetAsync(one.get(), 0, sizeof(int), stream_), "cudaMemsetAsync");
    check_nccl(ncclAllReduce(one.get(), one.get(), 1, ncclInt32, ncclSum, comm_, stream_), "ncclAllReduce", comm_);
    finish(step);
  }

  // Lengths first, then the bytes padded to the longest, as ncclAllGather needs equal counts.
  std::vector<std::string> all_gather(const std::string& bytes) override {
    const auto world = static_cast<std::size_t>(setup_.world_size);
    const std::int64_t length = static_cast<std::int64_t>(bytes.size());
    std::vector<std::int64_t> lengths(world);
    {
      const auto step = begin("all_gather of lengths");
      const DeviceBuffer in(sizeof(std::int64_t));
      const DeviceBuffer out(sizeof(std::int64_t) * world);
      check_cuda(cudaMemcpyAsync(in.get(), &length, sizeof(length), cudaMemcpyHostToDevice, stream_),
                 "cudaMemcpyAsync");
      check_nccl(ncclAllGather(in.get(), out.get(), 1, ncclInt64, comm_, stream_), "ncclAllGather", comm_);
      wait_for_enqueue(step);
      check_cuda(
          cudaMemcpyAsync(lengths.data(), out.get(), sizeof(std::int64_t) * world, cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpyAsync");
      finish(step);
    }
    const auto padded =
        static_cast<std::size_t>(std::max<std::int64_t>(1, *std::max_element(lengths.begin(), lengths.end())));
    std::vector<char> host_in(padded, 0);
    std::memcpy(host_in.data(), bytes.data(), bytes.size());
    std::vector<char> host_out(padded * world);
    const auto step = begin("all_gather");
    const DeviceBuffer in(padded);
    const DeviceBuffer out(padded * world);
    check_cuda(cudaMemcpyAsync(in.get(), host_in.data(), padded, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync");
    check_nccl(ncclAllGather(in.get(), out.get(), padded, ncclUint8, comm_, stream_), "ncclAllGather", comm_);
    wait_for_enqueue(step);
    check_cuda(cudaMemcpyAsync(host_out.data(), out.get(), padded * world, cudaMemcpyDeviceToHost, stream_),
               "cudaMemcpyAsync");
    finish(step);

    std::vector<std::string> gathered;
    for (std::size_t r = 0; r < world; ++r) {
      gathered.emplace_back(host_out.data() + r * padded, static_cast<std::size_t>(lengths[r]));
    }
    return gathered;
  }

 private:
  struct Step {
    std::string what;  // "NCCL all_gather (collective 3)"
    std::string name;  // "collective/3", under which each rank says it came
  };

  void release_stream() noexcept {
    if (done_ != nullptr) (void)cudaEventDestroy(done_);
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  }

  std::string step_key(const std::string& name) const { return fmt::format("nccl/{}/{}", name, setup_.rank); }

  // Every rank's NCCL version to rank 0, which compares them and answers with the unique
  // id or the refusal, so a mismatch stops every rank with the same message.
  ncclUniqueId agree_on_setup() {
    store_.set(version_key(setup_.rank), std::to_string(linked_nccl_version()));
    ncclUniqueId id{};
    static_assert(sizeof(id.internal) == NCCL_UNIQUE_ID_BYTES);
    const auto came_to_setup = [this] { return came_to(version_key); };
    if (setup_.rank == 0) {
      check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
      std::vector<std::string> keys;
      for (int r = 0; r < setup_.world_size; ++r) keys.push_back(version_key(r));
      await_keys(store_, keys, {0, "the NCCL set-up (every rank's NCCL version)", setup_.timeout}, came_to_setup);
      std::vector<int> versions;
      for (const auto& key : keys) versions.push_back(std::stoi(store_.get(key)));
      if (const auto mismatch = nccl_version_mismatch(versions)) {
        store_.set(kSetupKey, kRefusedTag + *mismatch);
        throw UsageError(*mismatch);
      }
      store_.set(kSetupKey, kIdTag + std::string(id.internal, sizeof(id.internal)));
      return id;
    }
    await_keys(store_, {kSetupKey}, {setup_.rank, "the NCCL set-up (rank 0's unique id)", setup_.timeout}, [&] {
      const auto missing = came_to_setup();
      return missing.starts_with("every rank came") ? "rank 0 did not share NCCL's unique id" : missing;
    });
    const std::string shared = store_.get(kSetupKey);
    if (!shared.empty() && shared.front() == kRefusedTag) throw UsageError(shared.substr(1));
    if (shared.size() != 1 + sizeof(id.internal)) {
      throw std::runtime_error(
          fmt::format("the NCCL id rank 0 shared has {} bytes, not {}", shared.size() - 1, sizeof(id.internal)));
    }
    std::memcpy(id.internal, shared.data() + 1, sizeof(id.internal));
    return id;
  }

  // Who held a step up: the ranks with no key under it, then those whose beat stopped.
  template <class KeyOf>
  std::string came_to(const KeyOf& key_of) {
    std::vector<bool> came(static_cast<std::size_t>(setup_.world_size), true);
    for (int r = 0; r < setup_.world_size; ++r) {
      if (r != setup_.rank) came[static_cast<std::size_t>(r)] = store_.check(key_of(r));
    }
    return held_up_message(came, setup_.peers != nullptr ? setup_.peers->stopped() : std::vector<int>{}, setup_.hosts);
  }

  Step begin(const char* collective) {
    if (aborted_) {
      throw IoError(fmt::format("rank {}: the NCCL communicator was aborted after an earlier failure", setup_.rank));
    }
    check_cuda(cudaSetDevice(setup_.device_index), "cudaSetDevice");
    Step step{fmt::format("NCCL {} (collective {})", collective, collectives_ + 1),
              fmt::format("collective/{}", collectives_ + 1)};
    ++collectives_;
    store_.set(step_key(step.name), "");
    return step;
  }

  // A non-blocking communicator may still be enqueuing (ncclInProgress): nothing else may
  // go on its stream until it has.
  void wait_for_enqueue(const Step& step) { await(step.what, step.name, nullptr); }

  void finish(const Step& step) {
    check_cuda(cudaEventRecord(done_, stream_), "cudaEventRecord");
    await(step.what, step.name, done_);
  }

  void await(const std::string& what, const std::string& name, cudaEvent_t event) {
    NcclOperation operation(comm_, event, aborted_);
    const auto key_of = [&name](int r) { return fmt::format("nccl/{}/{}", name, r); };
    await_with_deadline(
        operation, {setup_.rank, what, setup_.timeout}, [&] { return came_to(key_of); },
        [this] {
          if (setup_.peers != nullptr) setup_.peers->look();
        });
  }

  KeyValueStore& store_;
  NcclSetup setup_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t done_ = nullptr;  // recorded after each collective's last copy
  ncclComm_t comm_ = nullptr;
  bool aborted_ = false;  // ncclCommAbort freed comm_: nothing may touch it again
  int collectives_ = 0;
};

}  // namespace

int linked_nccl_version() {
  int version = 0;
  check_nccl(ncclGetVersion(&version), "ncclGetVersion");
  return version;
}

std::unique_ptr<Collectives> make_nccl_collectives(KeyValueStore& store, const NcclSetup& setup) {
  // The rank, device and cause in one line, as the error's own kind: a refusal stays a
  // UsageError (exit 2), a deadline an IoError.
  const auto context = [&](const std::exception& error) {
    std::string cause = error.what();
    if (const auto own = fmt::format("rank {}: ", setup.rank); cause.starts_with(own)) cause.erase(0, own.size());
    return fmt::format("rank {}: the NCCL communicator on CUDA device {} could not be set up: {}", setup.rank,
                       setup.device_index, cause);
  };
  try {
    return std::make_unique<NcclCollectives>(store, setup);
  } catch (const UsageError& error) {
    throw UsageError(context(error));
  } catch (const IoError& error) {
    throw IoError(context(error));
  } catch (const std::exception& error) {
    throw std::runtime_error(context(error));
  }
}

}  // namespace mgpr::runtime
