#pragma once
// The model's output brought to the host: every tensor in it (a tensor, or lists, tuples
// and dicts of them, as the tasks' contracts allow: docs/models.md) copied into host
// memory, the containers rebuilt around the copies.
#include <torch/script.h>

namespace mgpr::runtime {

// With `asynchronous`, each copy of a device tensor goes into page-locked memory and is
// only queued on the current stream: the host tensors are valid once that stream has
// passed the copies (an event recorded after them). Host tensors are returned as they are.
torch::IValue output_to_host(const torch::IValue& output, bool asynchronous);

}  // namespace mgpr::runtime
