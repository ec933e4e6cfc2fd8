#include "geometry/pixel_polygons.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace mgpr::runtime {
namespace {

// Directions in raster pixels (y grows down), in clockwise order on the screen: turning
// right is +1.
constexpr std::array<int, 4> kDx{1, 0, -1, 0};
constexpr std::array<int, 4> kDy{0, 1, 0, -1};

// A unit edge: its start corner and direction, packed (x and y below 2^31).
using EdgeKey = std::uint64_t;
EdgeKey key_of(int x, int y, int direction) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(y)) << 33) |
         (static_cast<std::uint64_t>(static_cast<std::uint32_t>(x)) << 2) | static_cast<std::uint64_t>(direction);
}
int x_of(EdgeKey key) { return static_cast<int>((key >> 2) & 0x7fffffffU); }
int y_of(EdgeKey key) { return static_cast<int>(key >> 33); }
int direction_of(EdgeKey key) { return static_cast<int>(key & 3U); }
EdgeKey reverse_of(EdgeKey key) {
  const int d = direction_of(key);
  return key_of(x_of(key) + kDx[static_cast<std::size_t>(d)], y_of(key) + kDy[static_cast<std::size_t>(d)],
                (d + 2) % 4);
}

// Unit edges, in the order they were added (so rings start where the scan met them, the
// same on every rank, without sorting) and as a set.
struct EdgeSet {
  std::vector<EdgeKey> order;  // may list an edge removed since, or twice
  std::unordered_set<EdgeKey> present;
  void add(EdgeKey key) {
    if (present.insert(key).second) order.push_back(key);
  }
  // Adds `key`, or removes its reverse when present: an edge between two pieces.
  void add_or_cancel(EdgeKey key) {
    if (present.erase(reverse_of(key)) == 0) add(key);
  }
};

int direction_between(const PixelPoint& from, const PixelPoint& to) {
  if (to.y == from.y) return to.x > from.x ? 0 : 2;
  return to.y > from.y ? 1 : 3;
}

// Adds the ring's unit edges, each cancelling its reverse. `clockwise`: the orientation
// the ring must have (the shape's inside on the right of every edge).
bool add_ring(const PixelRing& ring, bool clockwise, EdgeSet& edges) {
  const bool reverse = (twice_area(ring) > 0) != clockwise;
  const auto n = ring.size();
  for (std::size_t i = 0; i + 1 < n; ++i) {
    auto from = ring[reverse ? n - 1 - i : i];
    const auto to = ring[reverse ? n - 2 - i : i + 1];
    if (from.x != to.x && from.y != to.y) return false;  // not along pixel edges
    if (from == to) continue;
    const int d = direction_between(from, to);
    while (from != to) {
      edges.add_or_cancel(key_of(from.x, from.y, d));
      from.x += kDx[static_cast<std::size_t>(d)];
      from.y += kDy[static_cast<std::size_t>(d)];
    }
  }
  return true;
}

// The rings `edges` make, as one polygon; nullopt when they make several outer rings or
// an open chain. Empties the set.
std::optional<PixelPolygon> link_rings(EdgeSet& edge_set) {
  auto& edges = edge_set.present;
  std::optional<PixelRing> shell;
  std::vector<PixelRing> holes;
  bool apart = false;
  const auto add = [&](PixelRing ring) {
    auto cleaned = without_collinear_points(ring);
    if (twice_area(cleaned) < 0) {
      holes.push_back(std::move(cleaned));
    } else {
      apart = apart || shell.has_value();  // two outer rings: pieces apart
      shell = std::move(cleaned);
    }
  };
  const auto corner_key = [](const PixelPoint& p) { return key_of(p.x, p.y, 0); };
  for (const auto start : edge_set.order) {
    if (!edges.contains(start)) continue;
    // The path walked; a corner met again closes the loop since, a ring of its own.
    PixelRing path{{x_of(start), y_of(start)}};
    std::unordered_map<EdgeKey, std::size_t> position{{corner_key(path.front()), 0}};
    auto edge = start;
    while (true) {
      edges.erase(edge);
      const int d = direction_of(edge);
      const PixelPoint end{x_of(edge) + kDx[static_cast<std::size_t>(d)],
                           y_of(edge) + kDy[static_cast<std::size_t>(d)]};
      if (const auto met = position.find(corner_key(end)); met != position.end()) {
        const auto from = met->second;
        PixelRing loop(path.begin() + static_cast<std::ptrdiff_t>(from), path.end());
        loop.push_back(end);
        for (auto k = from + 1; k < path.size(); ++k) position.erase(corner_key(path[k]));
        path.resize(from + 1);
        add(std::move(loop));
      } else {
        position.emplace(corner_key(end), path.size());
        path.push_back(end);
      }
      // Hug the inside: a right turn first, then straight on, then left, so that where
      // the boundary passes a corner twice each loop keeps to its own side. Back at the
      // start, the walk ends when its first edge is the one the rule takes.
      bool closed = false;
      bool found = false;
      for (const int turn : {1, 0, 3}) {
        const auto next = key_of(end.x, end.y, (d + turn) % 4);
        if (next == start) {
          closed = true;
          break;
        }
        if (edges.contains(next)) {
          edge = next;
          found = true;
          break;
        }
      }
      if (closed) break;
      if (!found) return std::nullopt;  // an open chain: the pieces were not polygons
    }
  }
  if (apart) return std::nullopt;
  if (!shell) return std::nullopt;
  PixelPolygon united;
  united.rings.reserve(holes.size() + 1);
  united.rings.push_back(std::move(*shell));
  for (auto& hole : holes) united.rings.push_back(std::move(hole));
  return united;
}

}  // namespace

std::optional<PixelPolygon> unite_pixel_polygons(std::span<const PixelPolygon> pieces) {
  EdgeSet edges;
  for (const auto& piece : pieces) {
    for (std::size_t r = 0; r < piece.rings.size(); ++r) {
      const auto& ring = piece.rings[r];
      const auto negative = [](const PixelPoint& p) { return p.x < 0 || p.y < 0; };
      if (ring.size() < 4 || std::any_of(ring.begin(), ring.end(), negative)) return std::nullopt;
      if (!add_ring(ring, r == 0, edges)) return std::nullopt;
    }
  }
  return link_rings(edges);
}

std::vector<PixelPolygon> region_polygons(std::span<const std::int32_t> labels, const PixelWindow& core,
                                          std::size_t count) {
  std::vector<EdgeSet> edges(count);
  const int width = core.width;
  const auto at = [&](int x, int y) {
    return labels[static_cast<std::size_t>(y) * static_cast<std::size_t>(width) + static_cast<std::size_t>(x)];
  };
  for (int y = 0; y < core.height; ++y) {
    const int py = core.y + y;
    int x = 0;
    // Run by run: the empty ones skipped whole, a run's sides added once; only its
    // pixels' tops and bottoms are looked at one by one.
    while (x < width) {
      const auto label = at(x, y);
      int end = x + 1;
      while (end < width && at(end, y) == label) ++end;
      if (label != 0) {
        auto& own = edges[static_cast<std::size_t>(label - 1)];
        // The inside on the right: along the top eastwards, down the right side, along
        // the bottom westwards, up the left side.
        own.add(key_of(core.x + x, py + 1, 3));
        own.add(key_of(core.x + end, py, 1));
        for (int column = x; column < end; ++column) {
          const int px = core.x + column;
          if (y == 0 || at(column, y - 1) != label) own.add(key_of(px, py, 0));
          if (y + 1 == core.height || at(column, y + 1) != label) own.add(key_of(px + 1, py + 1, 2));
        }
      }
      x = end;
    }
  }
  std::vector<PixelPolygon> polygons(count);
  for (std::size_t r = 0; r < count; ++r) {
    auto polygon = link_rings(edges[r]);
    if (polygon) polygons[r] = std::move(*polygon);
  }
  return polygons;
}

}  // namespace mgpr::runtime
