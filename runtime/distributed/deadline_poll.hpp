#pragma once
// Waiting on an operation that may never end. NCCL's blocking calls have no timeout of
// their own: a peer that died, or a network the GPUs cannot cross, holds a rank in
// communicator creation or in a collective for good, and says nothing. NCCL's
// non-blocking mode lets the caller poll instead; this is that polling, with a deadline,
// apart from CUDA so it is unit-tested with fake operations (docs/runtime-distributed.md).
#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace mgpr::runtime {

class KeyValueStore;

enum class OperationState { kInProgress, kDone, kFailed };

struct OperationStatus {
  OperationState state = OperationState::kInProgress;
  std::string error;  // kFailed: what the library said
};

// An operation already started (a communicator being created, a collective enqueued).
class PendingOperation {
 public:
  virtual ~PendingOperation() = default;
  virtual OperationStatus poll() = 0;
  // Gives up on the operation and whatever it holds (ncclCommAbort); called at most once.
  virtual void abort() noexcept = 0;
};

struct Deadline {
  int rank = 0;      // the waiting rank, named first in every message
  std::string what;  // "NCCL all_gather (collective 3)"
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

// Polls `operation` until it is done. When it fails, aborts it and throws IoError with
// the library's text; when `deadline` passes first, aborts it and throws IoError saying
// who held it up (`held_up_by()`, asked once, then). While it runs past its first second,
// `looking` (optional) is called about once a second: the peers' beats are sampled then.
void await_with_deadline(PendingOperation& operation, const Deadline& deadline,
                         const std::function<std::string()>& held_up_by, const std::function<void()>& looking = {});

// Waits until every key of `keys` is set in `store`: the ranks' arrival at a step that
// happens through the store. At the deadline, throws IoError naming the missing keys'
// ranks through `held_up_by`.
void await_keys(KeyValueStore& store, const std::vector<std::string>& keys, const Deadline& deadline,
                const std::function<std::string()>& held_up_by);

// Who held an overdue step up, for the messages above: the ranks that never came to it
// (`came[r]` false), then those that came but whose beat has since stopped (`stopped`),
// each with its host when `hosts` (by rank) is not empty. When nobody is missing, says
// that every rank is there and alive, so the fault is NCCL's network or a hung GPU.
std::string held_up_message(const std::vector<bool>& came, const std::vector<int>& stopped,
                            const std::vector<std::string>& hosts);

// "5 s", "1.5 s", "200 ms".
std::string format_duration(std::chrono::milliseconds duration);

}  // namespace mgpr::runtime
