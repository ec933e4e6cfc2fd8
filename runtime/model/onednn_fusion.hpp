#pragma once
// oneDNN Graph (LLGA): LibTorch's fuser for TorchScript on a CPU, which hands a frozen
// graph's convolutions, additions and activations to oneDNN as fused partitions. It runs
// as a pass of the profiling executor, when that executor optimises a graph for the
// shapes it has seen.

namespace mgpr::runtime {

// Registers the fuser's pass with the graph executor, once per process (it applies to
// every graph the profiling executor optimises from then on). False where this LibTorch
// has no such fuser: 1.x, or a build without oneDNN.
bool enable_onednn_fusion();

}  // namespace mgpr::runtime
