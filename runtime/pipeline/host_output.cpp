#include "pipeline/host_output.hpp"

#include <stdexcept>

namespace mgpr::runtime {
namespace {

torch::Tensor tensor_to_host(const torch::Tensor& tensor, bool asynchronous) {
  if (!tensor.defined() || tensor.device().is_cpu()) return tensor;
  if (!asynchronous) return tensor.cpu();
  // A detector gives a few small tensors per tile: each is queued, none waited for, so
  // the copies cost launches, not round trips.
  auto host = torch::empty(tensor.sizes(), tensor.options().device(torch::kCPU).pinned_memory(true));
  host.copy_(tensor, /*non_blocking=*/true);
  return host;
}

}  // namespace

torch::IValue output_to_host(const torch::IValue& output, bool asynchronous) {
  if (output.isTensor()) return tensor_to_host(output.toTensor(), asynchronous);
  if (output.isTensorList()) {
    c10::List<torch::Tensor> list;
    for (const torch::Tensor& tensor : output.toTensorList()) list.push_back(tensor_to_host(tensor, asynchronous));
    return list;
  }
  if (output.isList()) {
    const auto source = output.toList();
    c10::impl::GenericList list(source.elementType());
    for (const auto& item : source) list.push_back(output_to_host(item, asynchronous));
    return list;
  }
  if (output.isTuple()) {
    std::vector<torch::IValue> items;
    for (const auto& item : output.toTupleRef().elements()) items.push_back(output_to_host(item, asynchronous));
    return c10::ivalue::Tuple::create(std::move(items));
  }
  if (output.isGenericDict()) {
    const auto source = output.toGenericDict();
    c10::impl::GenericDict dict(source.keyType(), source.valueType());
    for (const auto& entry : source) dict.insert(entry.key(), output_to_host(entry.value(), asynchronous));
    return dict;
  }
  // Numbers, strings, None: nothing on a device.
  return output;
}

}  // namespace mgpr::runtime
