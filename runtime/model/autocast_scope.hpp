#pragma once
// Mixed precision the way PyTorch users know it (torch.autocast): the model keeps its
// fp32 weights and each operator runs in the precision autocast chooses for it, so
// convolutions and matrix products take fp16/bf16 while softmax, norms and reductions
// stay in fp32. Casting the whole model instead loses accuracy in those.
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

namespace mgpr::runtime {

// Enables autocast for `device_type` in `dtype` on the calling thread (autocast state is
// thread-local) and restores the previous state on destruction, nesting like Python's
// `with torch.autocast(...)`. LibTorch 1.13 and 2.x spell the calls differently; this is
// the one place that knows both.
class AutocastScope {
 public:
  AutocastScope(c10::DeviceType device_type, c10::ScalarType dtype);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  c10::DeviceType device_type_;
  bool was_enabled_;
  c10::ScalarType previous_dtype_;
};

}  // namespace mgpr::runtime
