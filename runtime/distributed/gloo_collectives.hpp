#pragma once
// Collectives through Gloo on the CPU: those of a run without GPUs, or of a build
// without NCCL. Apart from the rendezvous so that Gloo's process group, whose headers
// compile slowly, is built in one file of its own.
#include <c10/util/intrusive_ptr.h>

#include <chrono>
#include <memory>

#include "distributed/collectives.hpp"
#include "mgpr/env_names.hpp"

namespace c10d {
class Store;
}

namespace mgpr::runtime {

// A Gloo process group over `store` (its keys under the prefix "gloo"), on the network
// interface GLOO_SOCKET_IFNAME names, else the one that reaches the master address.
// Throws c10::Error when the ranks cannot connect to each other within `timeout`.
std::unique_ptr<Collectives> make_gloo_collectives(const c10::intrusive_ptr<c10d::Store>& store,
                                                   const RankEnvironment& ranks, std::chrono::milliseconds timeout);

}  // namespace mgpr::runtime
