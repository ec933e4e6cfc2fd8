#include "geometry/region_dissolve.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "geometry/union_find.hpp"

namespace mgpr::runtime {
namespace {

// A run and the region (index among those of the call) it belongs to.
struct RunOf {
  SeamRun run;
  std::size_t region = 0;
  int class_value = 0;
};

// Joins the regions of `before` (runs on the first side of seam lines) with those of
// `after` (the other side) whose runs on the same line share an edge, same class only.
void join_across(std::vector<RunOf> before, std::vector<RunOf> after, UnionFind& groups) {
  const auto order = [](const RunOf& a, const RunOf& b) {
    return std::tie(a.run.line, a.run.begin) < std::tie(b.run.line, b.run.begin);
  };
  std::sort(before.begin(), before.end(), order);
  std::sort(after.begin(), after.end(), order);
  // Runs of one side of a line never overlap: a sweep finds every overlapping pair.
  std::size_t b = 0;
  std::size_t a = 0;
  while (b < before.size() && a < after.size()) {
    const auto& x = before[b];
    const auto& y = after[a];
    if (x.run.line != y.run.line) {
      (x.run.line < y.run.line ? b : a) += 1;
      continue;
    }
    if (x.run.begin < y.run.end && y.run.begin < x.run.end && x.class_value == y.class_value) {
      groups.join(x.region, y.region);
    }
    (x.run.end < y.run.end ? b : a) += 1;
  }
}

}  // namespace

std::vector<std::vector<std::size_t>> RegionDissolve::add_row(std::span<const Region> regions, std::size_t first_handle,
                                                              bool last_row) {
  // Indices: the held regions first, then the row's.
  const std::size_t held_count = held_.size();
  const std::size_t count = held_count + regions.size();
  UnionFind groups(count);
  std::vector<RunOf> above;                        // held regions' bottom runs
  std::vector<RunOf> below;                        // the row's top runs
  std::vector<RunOf> left;                         // right sides: the left of a vertical seam
  std::vector<RunOf> right;                        // left sides
  std::map<std::size_t, std::size_t> group_start;  // a held group's first region
  for (std::size_t i = 0; i < held_count; ++i) {
    // Regions held apart from their group's other regions, joined again first.
    const auto [start, first] = group_start.try_emplace(held_[i].group, i);
    if (!first) groups.join(start->second, i);
    for (const auto& run : held_[i].bottom) above.push_back({run, i, held_[i].class_value});
  }
  std::vector<bool> open_below(count, false);
  for (std::size_t r = 0; r < regions.size(); ++r) {
    const auto index = held_count + r;
    for (const auto& run : regions[r].seams) {
      const RunOf of{run, index, regions[r].class_value};
      switch (run.side) {
        case SeamRun::Side::kTop:
          below.push_back(of);
          break;
        case SeamRun::Side::kBottom:
          open_below[index] = !last_row;
          break;
        case SeamRun::Side::kRight:
          left.push_back(of);
          break;
        case SeamRun::Side::kLeft:
          right.push_back(of);
          break;
      }
    }
  }
  join_across(std::move(above), std::move(below), groups);
  join_across(std::move(left), std::move(right), groups);

  // A group with a region open below waits; the others are final.
  std::vector<bool> waits(count, false);
  for (std::size_t i = 0; i < count; ++i) {
    if (open_below[i]) waits[groups.find(i)] = true;
  }
  const auto handle_of = [&](std::size_t i) {
    return i < held_count ? held_[i].handle : first_handle + (i - held_count);
  };
  std::map<std::size_t, std::vector<std::size_t>> final_groups;  // by root: handles
  std::vector<Held> still_held;
  for (std::size_t i = 0; i < count; ++i) {
    const auto root = groups.find(i);
    if (!waits[root]) {
      final_groups[root].push_back(handle_of(i));
      continue;
    }
    Held kept;
    kept.handle = handle_of(i);
    kept.group = root;
    if (i < held_count) {
      kept.class_value = held_[i].class_value;  // its bottom runs were matched just now
    } else {
      const auto& region = regions[i - held_count];
      kept.class_value = region.class_value;
      for (const auto& run : region.seams) {
        if (run.side == SeamRun::Side::kBottom) kept.bottom.push_back(run);
      }
    }
    still_held.push_back(std::move(kept));
  }
  // Handles grow with the index, so each group's are in order and a root's group starts
  // with its smallest: ordered by root is ordered by first handle.
  held_ = std::move(still_held);
  std::vector<std::vector<std::size_t>> out;
  out.reserve(final_groups.size());
  for (auto& [root, handles] : final_groups) out.push_back(std::move(handles));
  return out;
}

}  // namespace mgpr::runtime
