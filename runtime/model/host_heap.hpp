#pragma once
// How the process's heap hands memory back to the kernel. A forward pass allocates and
// frees hundreds of megabytes of activations; glibc's defaults serve blocks that large
// with mmap and unmap them on free (and trim the heap's top past 128 KiB), so every
// batch page-faults its activations in again, zero-filled by the kernel. Measured on a
// 2-CPU VM (ResNet-50, 512² tiles, batch 16, one thread): 8 s of 16 s spent in the
// kernel, and two ranks side by side slowed each other on those faults
// (docs/benchmarks.md). Keeping freed memory in the heap trades that for a resident
// size at the run's peak, which the memory budget already allows for.
namespace mgpr::runtime {

// Sets glibc's mmap and trim thresholds so freed memory is reused instead of returned,
// unless the user set glibc.malloc tunables of their own (GLIBC_TUNABLES), which win.
// Returns whether it set them. Call before the model is loaded.
bool keep_freed_memory_in_heap();

}  // namespace mgpr::runtime
