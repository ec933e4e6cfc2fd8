#include "model/tile_outputs.hpp"

#include <vector>

namespace mgpr::runtime {
namespace {

std::optional<torch::IValue> join(std::span<const torch::IValue> parts, std::span<const std::int64_t> tiles);

std::optional<torch::IValue> join_tensors(std::span<const torch::IValue> parts, std::span<const std::int64_t> tiles) {
  std::vector<torch::Tensor> tensors;
  tensors.reserve(parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (!parts[i].isTensor()) return std::nullopt;
    const auto& tensor = parts[i].toTensor();
    if (tensor.dim() == 0 || tensor.size(0) != tiles[i]) return std::nullopt;
    if (i > 0 &&
        (tensor.dim() != tensors.front().dim() || tensor.sizes().slice(1) != tensors.front().sizes().slice(1) ||
         tensor.scalar_type() != tensors.front().scalar_type())) {
      return std::nullopt;
    }
    tensors.push_back(tensor);
  }
  return torch::IValue(torch::cat(tensors, 0));
}

std::optional<torch::IValue> join_lists(std::span<const torch::IValue> parts, std::span<const std::int64_t> tiles) {
  const auto first = parts.front().toList();
  c10::impl::GenericList joined(first.elementType());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (!parts[i].isList()) return std::nullopt;
    const auto list = parts[i].toList();
    if (static_cast<std::int64_t>(list.size()) != tiles[i] || !(*list.elementType() == *first.elementType())) {
      return std::nullopt;
    }
    for (const auto& entry : list) joined.push_back(entry);
  }
  return torch::IValue(std::move(joined));
}

std::optional<torch::IValue> join_tuples(std::span<const torch::IValue> parts, std::span<const std::int64_t> tiles) {
  const auto arity = parts.front().toTupleRef().elements().size();
  std::vector<torch::IValue> joined;
  for (std::size_t element = 0; element < arity; ++element) {
    std::vector<torch::IValue> column;
    for (const auto& part : parts) {
      if (!part.isTuple() || part.toTupleRef().elements().size() != arity) return std::nullopt;
      column.push_back(part.toTupleRef().elements()[element]);
    }
    auto value = join(column, tiles);
    if (!value) return std::nullopt;
    joined.push_back(std::move(*value));
  }
  return torch::IValue(c10::ivalue::Tuple::create(std::move(joined)));
}

std::optional<torch::IValue> join_dicts(std::span<const torch::IValue> parts, std::span<const std::int64_t> tiles) {
  const auto first = parts.front().toGenericDict();
  c10::impl::GenericDict joined(first.keyType(), first.valueType());
  for (const auto& part : parts) {
    if (!part.isGenericDict() || part.toGenericDict().size() != first.size()) return std::nullopt;
  }
  for (const auto& entry : first) {
    std::vector<torch::IValue> column;
    for (const auto& part : parts) {
      const auto dict = part.toGenericDict();
      const auto found = dict.find(entry.key());
      if (found == dict.end()) return std::nullopt;
      column.push_back(found->value());
    }
    auto value = join(column, tiles);
    if (!value) return std::nullopt;
    joined.insert(entry.key(), std::move(*value));
  }
  return torch::IValue(std::move(joined));
}

std::optional<torch::IValue> join(std::span<const torch::IValue> parts, std::span<const std::int64_t> tiles) {
  const auto& first = parts.front();
  if (first.isTensor()) return join_tensors(parts, tiles);
  if (first.isList()) return join_lists(parts, tiles);
  if (first.isTuple()) return join_tuples(parts, tiles);
  if (first.isGenericDict()) return join_dicts(parts, tiles);
  return std::nullopt;
}

}  // namespace

std::optional<torch::IValue> join_tile_outputs(std::span<const torch::IValue> parts,
                                               std::span<const std::int64_t> tiles) {
  if (parts.empty() || parts.size() != tiles.size()) return std::nullopt;
  if (parts.size() == 1) return parts.front();
  return join(parts, tiles);
}

}  // namespace mgpr::runtime
