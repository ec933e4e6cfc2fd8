// GPU collectives through NCCL's C API (the library installed beside CUDA): Debian's
// LibTorch is a CPU build, so c10d's ProcessGroupNCCL is not there to use. The
// communicator is non-blocking: creation and every collective return at once and are
// polled to a deadline (deadline_poll.hpp), so a rank that died or a network the GPUs
// cannot cross ends in a message naming who held it up, not in a hang. Nothing here may
// wait on the GPU without that deadline: copies go through pinned host memory (from
// pageable memory cudaMemcpyAsync returns only once the collective before it ended), and
// device memory is allocated once and freed only when no collective can still hold it
// (cudaFree waits for the whole device).
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "distributed/collectives.hpp"
#include "distributed/deadline_poll.hpp"
#include "distributed/nccl_checks.hpp"
#include "distributed/nccl_staging.hpp"
#include "mgpr/error.hpp"
#include "mgpr/store_keys.hpp"

// The non-blocking communicator (ncclCommInitRankConfig with blocking = 0) and
// ncclCommFinalize came in 2.14; without them every wait here would be unbounded.
// cmake/MgprDependencies.cmake skips this backend for an older nccl.h; this catches a
// header found some other way.
static_assert(NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0), "the NCCL backend needs NCCL 2.14 or newer");

namespace mgpr::runtime {
namespace {

using nccl_staging::check_cuda;
using nccl_staging::DeviceMemory;
using nccl_staging::PinnedHostMemory;
using nccl_staging::StagingBuffer;
using nccl_staging::StreamDrain;

// Rank 0's answer under the store's kNcclSetup: kIdTag and the unique id, or kRefusedTag and why.
constexpr char kIdTag = 'i';
constexpr char kRefusedTag = 'x';

std::string version_key(int rank) { return store_key(StoreKey::kNcclVersion, rank); }

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
      // Enough for the barrier and every gather of lengths, so those never reallocate.
      reserve_staging(sizeof(std::int64_t), sizeof(std::int64_t) * static_cast<std::size_t>(setup_.world_size));
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
        abort_communicator();
      }
    }
    // The communicator is finalized or aborted here. A collective still pending was
    // aborted (Step): its kernel may still be on the stream, and the buffers are freed only
    // once that has drained.
    if (pending_ && !stream_drained()) leak_staging();
    release_stream();
  }
  NcclCollectives(const NcclCollectives&) = delete;
  NcclCollectives& operator=(const NcclCollectives&) = delete;

  // NCCL has no barrier: an all-reduce of one number is one.
  void barrier() override {
    const auto step = begin("barrier", sizeof(std::int32_t), sizeof(std::int32_t));
    check_cuda(cudaMemsetAsync(device_in_.get(), 0, sizeof(std::int32_t), stream_), "cudaMemsetAsync");
    check_nccl(ncclAllReduce(device_in_.get(), device_out_.get(), 1, ncclInt32, ncclSum, comm_, stream_),
               "ncclAllReduce", comm_);
    // Recording the event before NCCL has enqueued the kernel would let it pass at once.
    wait_for_enqueue(step);
    finish(step);
  }

  // Lengths first, then the bytes padded to the longest, as ncclAllGather needs equal counts.
  std::vector<std::string> all_gather(const std::string& bytes) override {
    const auto world = static_cast<std::size_t>(setup_.world_size);
    std::vector<std::int64_t> lengths(world);
    {
      const auto step = begin("all_gather of lengths", sizeof(std::int64_t), sizeof(std::int64_t) * world);
      const auto length = static_cast<std::int64_t>(bytes.size());
      std::memcpy(host_in_.get(), &length, sizeof(length));
      copy(device_in_.get(), host_in_.get(), sizeof(length), cudaMemcpyHostToDevice);
      check_nccl(ncclAllGather(device_in_.get(), device_out_.get(), 1, ncclInt64, comm_, stream_), "ncclAllGather",
                 comm_);
      wait_for_enqueue(step);
      copy(host_out_.get(), device_out_.get(), sizeof(std::int64_t) * world, cudaMemcpyDeviceToHost);
      finish(step);
      std::memcpy(lengths.data(), host_out_.get(), sizeof(std::int64_t) * world);
    }
    const auto own = lengths[static_cast<std::size_t>(setup_.rank)];
    if (own != static_cast<std::int64_t>(bytes.size())) {
      throw std::runtime_error(
          fmt::format("rank {}: NCCL gathered {} as this rank's length, not {}", setup_.rank, own, bytes.size()));
    }
    const auto layout = gather_layout(lengths);
    const auto step = begin("all_gather", layout.padded, layout.total);
    std::memcpy(host_in_.bytes(), bytes.data(), bytes.size());
    std::memset(host_in_.bytes() + bytes.size(), 0, layout.padded - bytes.size());
    copy(device_in_.get(), host_in_.get(), layout.padded, cudaMemcpyHostToDevice);
    check_nccl(ncclAllGather(device_in_.get(), device_out_.get(), layout.padded, ncclUint8, comm_, stream_),
               "ncclAllGather", comm_);
    wait_for_enqueue(step);
    copy(host_out_.get(), device_out_.get(), layout.total, cudaMemcpyDeviceToHost);
    finish(step);
    return split_gathered({host_out_.bytes(), layout.total}, layout, lengths);
  }

 private:
  // A collective under way, from begin() to finish(). Left without finish (an exception
  // on the way), it aborts the communicator: the peers now wait in a collective this rank
  // will not finish, and after a failed call NCCL's communicator is unusable anyway.
  class Step {
   public:
    Step(NcclCollectives& owner, std::string what_, std::string name_)
        : what(std::move(what_)), name(std::move(name_)), owner_(owner) {
      owner_.pending_ = true;
    }
    ~Step() {
      if (owner_.pending_) owner_.abort_communicator();
    }
    Step(const Step&) = delete;
    Step& operator=(const Step&) = delete;

    const std::string what;  // "NCCL all_gather (collective 3)"
    const std::string name;  // "collective-3", under which each rank says it came

   private:
    NcclCollectives& owner_;
  };

  void release_stream() noexcept {
    if (done_ != nullptr) (void)cudaEventDestroy(done_);
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  }

  void abort_communicator() noexcept {
    if (comm_ != nullptr && !aborted_) (void)ncclCommAbort(comm_);
    aborted_ = true;
  }

  // Growing frees the old buffers, and freeing waits for the whole device: with a
  // collective pending, for one that may never end.
  void reserve_staging(std::size_t in_bytes, std::size_t out_bytes) {
    if (pending_) throw std::logic_error("the NCCL staging buffers cannot grow while a collective is pending");
    host_in_.reserve(in_bytes);
    device_in_.reserve(in_bytes);
    host_out_.reserve(out_bytes);
    device_out_.reserve(out_bytes);
  }

  void leak_staging() noexcept {
    host_in_.leak();
    device_in_.leak();
    host_out_.leak();
    device_out_.leak();
  }

  // After an abort NCCL's kernels see its flag and return within moments; one still on
  // the stream after kDrainGrace will not, and freeing memory then would wait for it for
  // good. Its buffers are leaked instead: the rank stops with an error after an abort,
  // and the process's end gives them back.
  bool stream_drained() noexcept {
    constexpr auto kDrainGrace = std::chrono::milliseconds(2000);
    try {
      check_cuda(cudaEventRecord(done_, stream_), "cudaEventRecord");
      StreamDrain drain(done_);
      await_with_deadline(drain, {setup_.rank, "draining the NCCL stream", std::min(setup_.timeout, kDrainGrace)}, {});
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }

  // Pinned host memory on either side, so the copy only queues on the stream and the
  // wait is the event's, under the deadline.
  void copy(void* to, const void* from, std::size_t bytes, cudaMemcpyKind kind) {
    check_cuda(cudaMemcpyAsync(to, from, bytes, kind, stream_), "cudaMemcpyAsync");
  }

  std::string step_key(const std::string& name) const { return store_key(StoreKey::kNcclStep, name, setup_.rank); }

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
        store_.set(store_key(StoreKey::kNcclSetup), kRefusedTag + *mismatch);
        throw UsageError(*mismatch);
      }
      store_.set(store_key(StoreKey::kNcclSetup), kIdTag + std::string(id.internal, sizeof(id.internal)));
      return id;
    }
    await_keys(store_, {store_key(StoreKey::kNcclSetup)},
               {setup_.rank, "the NCCL set-up (rank 0's unique id)", setup_.timeout}, [&] {
                 const auto missing = came_to_setup();
                 return missing.starts_with("every rank came") ? "rank 0 did not share NCCL's unique id" : missing;
               });
    const std::string shared = store_.get(store_key(StoreKey::kNcclSetup));
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

  // `in_bytes` and `out_bytes`: what the collective stages on each side, grown here,
  // before it is pending.
  Step begin(const char* collective, std::size_t in_bytes, std::size_t out_bytes) {
    if (aborted_) {
      throw IoError(fmt::format("rank {}: the NCCL communicator was aborted after an earlier failure", setup_.rank));
    }
    check_cuda(cudaSetDevice(setup_.device_index), "cudaSetDevice");
    reserve_staging(in_bytes, out_bytes);
    const int number = collectives_ + 1;
    std::string name = fmt::format("collective-{}", number);
    store_.set(step_key(name), "");
    ++collectives_;
    return Step(*this, fmt::format("NCCL {} (collective {})", collective, number), std::move(name));
  }

  // A non-blocking communicator may still be enqueuing (ncclInProgress): nothing else may
  // go on its stream until it has.
  void wait_for_enqueue(const Step& step) { await(step.what, step.name, nullptr); }

  void finish(const Step& step) {
    check_cuda(cudaEventRecord(done_, stream_), "cudaEventRecord");
    await(step.what, step.name, done_);
    pending_ = false;
  }

  void await(const std::string& what, const std::string& name, cudaEvent_t event) {
    NcclOperation operation(comm_, event, aborted_);
    const auto key_of = [&name](int r) { return store_key(StoreKey::kNcclStep, name, r); };
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
  bool pending_ = false;  // a collective began and has not finished (it was aborted if the call is over)
  int collectives_ = 0;
  // Each collective's bytes on their way in and out; see StagingBuffer.
  StagingBuffer<PinnedHostMemory> host_in_;
  StagingBuffer<PinnedHostMemory> host_out_;
  StagingBuffer<DeviceMemory> device_in_;
  StagingBuffer<DeviceMemory> device_out_;
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
