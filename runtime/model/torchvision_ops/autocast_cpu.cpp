// Added to torchvision's CPU operators when mgpr builds them (cmake/TorchvisionOps.cmake):
// rules for CPU autocast. torchvision 0.14 registers autocast rules for CUDA only, so under
// precision=auto's bf16 autocast its nms met bfloat16 boxes and failed ("nms_kernel not
// implemented for 'BFloat16'"), and auto fell back to fp32 for every detector. As later
// torchvision releases do, these run nms and roi_align in fp32 under CPU autocast (the
// boxes' and pooled features' precision matters more than their cost) and hand roi_align's
// result back in the caller's type; the convolutions around them stay in bf16.
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include <cstdint>

namespace {

at::Tensor nms_in_fp32(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold) {
  const c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
  static const auto nms = c10::Dispatcher::singleton()
                              .findSchemaOrThrow("torchvision::nms", "")
                              .typed<at::Tensor(const at::Tensor&, const at::Tensor&, double)>();
  return nms.call(boxes.to(at::kFloat), scores.to(at::kFloat), iou_threshold);
}

at::Tensor roi_align_in_fp32(const at::Tensor& input, const at::Tensor& rois, double spatial_scale,
                             std::int64_t pooled_height, std::int64_t pooled_width, std::int64_t sampling_ratio,
                             bool aligned) {
  const c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
  static const auto roi_align = c10::Dispatcher::singleton()
                                    .findSchemaOrThrow("torchvision::roi_align", "")
                                    .typed<at::Tensor(const at::Tensor&, const at::Tensor&, double, std::int64_t,
                                                      std::int64_t, std::int64_t, bool)>();
  // The CPU kernel reads NCHW: a channels-last feature map is made NCHW in the same copy
  // that makes it fp32, not in a second one (4 FPN levels of a batch of 4: 157 ms against
  // 230 ms on an EPYC Zen 4, docs/benchmarks.md).
  const auto fp32_nchw = input.to(at::kFloat, /*non_blocking=*/false, /*copy=*/false, at::MemoryFormat::Contiguous);
  return roi_align
      .call(fp32_nchw, rois.to(at::kFloat), spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned)
      .to(input.scalar_type());
}

}  // namespace

TORCH_LIBRARY_IMPL(torchvision, AutocastCPU, m) {
  m.impl("nms", TORCH_FN(nms_in_fp32));
  m.impl("roi_align", TORCH_FN(roi_align_in_fp32));
}
