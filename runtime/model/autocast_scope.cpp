#include "model/autocast_scope.hpp"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

namespace mgpr::runtime {
namespace {

#if TORCH_VERSION_MAJOR >= 2
// 2.x: one call per property, taking the device type (the 1.13 names were removed).
bool enabled(c10::DeviceType type) { return at::autocast::is_autocast_enabled(type); }
void set_enabled(c10::DeviceType type, bool on) { at::autocast::set_autocast_enabled(type, on); }
c10::ScalarType dtype(c10::DeviceType type) { return at::autocast::get_autocast_dtype(type); }
void set_dtype(c10::DeviceType type, c10::ScalarType value) { at::autocast::set_autocast_dtype(type, value); }
#else
// 1.13: separate functions for CPU and the GPU.
bool enabled(c10::DeviceType type) {
  return type == c10::DeviceType::CPU ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled();
}
void set_enabled(c10::DeviceType type, bool on) {
  if (type == c10::DeviceType::CPU) {
    at::autocast::set_cpu_enabled(on);
  } else {
    at::autocast::set_enabled(on);
  }
}
c10::ScalarType dtype(c10::DeviceType type) {
  return type == c10::DeviceType::CPU ? at::autocast::get_autocast_cpu_dtype() : at::autocast::get_autocast_gpu_dtype();
}
void set_dtype(c10::DeviceType type, c10::ScalarType value) {
  if (type == c10::DeviceType::CPU) {
    at::autocast::set_autocast_cpu_dtype(value);
  } else {
    at::autocast::set_autocast_gpu_dtype(value);
  }
}
#endif

}  // namespace

AutocastScope::AutocastScope(c10::DeviceType device_type, c10::ScalarType dtype_in_scope)
    : device_type_(device_type), was_enabled_(enabled(device_type)), previous_dtype_(dtype(device_type)) {
  set_enabled(device_type_, true);
  set_dtype(device_type_, dtype_in_scope);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  // The weights' low-precision copies are cached for the outermost scope's lifetime, as
  // torch.autocast does; dropping them there keeps memory from growing across scopes.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_enabled(device_type_, was_enabled_);
  set_dtype(device_type_, previous_dtype_);
}

}  // namespace mgpr::runtime
