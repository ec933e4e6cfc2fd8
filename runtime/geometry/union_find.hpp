#pragma once
// Groups of indices joined pair by pair (union-find with path halving). A group's root
// is its smallest index, so groups listed by root come in the order of their first
// member: what the regions' numbering and the dissolve's output order rely on.
#include <algorithm>
#include <cstddef>
#include <numeric>
#include <vector>

namespace mgpr::runtime {

class UnionFind {
 public:
  explicit UnionFind(std::size_t count) : parent_(count) { std::iota(parent_.begin(), parent_.end(), std::size_t{0}); }
  std::size_t find(std::size_t at) {
    while (parent_[at] != at) {
      parent_[at] = parent_[parent_[at]];
      at = parent_[at];
    }
    return at;
  }
  void join(std::size_t a, std::size_t b) {
    a = find(a);
    b = find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }

 private:
  std::vector<std::size_t> parent_;
};

}  // namespace mgpr::runtime
