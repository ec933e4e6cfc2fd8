"""What mgpr should write, computed independently in Python from docs/outputs.md.

Tiles, placement, the detection merge and the segmentation overlap rule are written here
again from the documentation, not from mgpr's C++: the tests compare mgpr's files with
these, so a drift of either from the documented rules shows.
"""
from dataclasses import dataclass
from typing import List, Tuple

import numpy as np
import torch
from osgeo import gdal

gdal.UseExceptions()

EDGE_TOLERANCE = 1.0  # px: a box this close to a tile edge inside the image was cut by it
CONTAINMENT = 0.5


def window_starts(length: int, tile: int, overlap: int) -> List[int]:
    if length <= tile:
        return [0]
    starts = list(range(0, length - tile, tile - overlap))
    if starts[-1] != length - tile:
        starts.append(length - tile)
    return starts


@dataclass(frozen=True)
class Window:
    row: int
    column: int
    x: int
    y: int
    width: int
    height: int


def tile_grid(width: int, height: int, tile: int, overlap: int) -> List[Window]:
    return [Window(r, c, x, y, min(tile, width), min(tile, height))
            for r, y in enumerate(window_starts(height, tile, overlap))
            for c, x in enumerate(window_starts(width, tile, overlap))]


def read_image(path: str) -> Tuple[np.ndarray, tuple]:
    dataset = gdal.Open(path)
    pixels = np.stack([dataset.GetRasterBand(b + 1).ReadAsArray() for b in range(3)])
    return pixels, dataset.GetGeoTransform()


def tile_tensor(pixels: np.ndarray, window: Window, tile: int) -> torch.Tensor:
    """mgpr's input: bands 1-3, uint8 / 255, zero-padded at the bottom and right."""
    batch = torch.zeros(1, 3, tile, tile)
    part = pixels[:, window.y:window.y + window.height, window.x:window.x + window.width]
    batch[0, :, :window.height, :window.width] = torch.from_numpy(part.astype(np.float32) / 255.0)
    return batch


@dataclass
class Box:
    x1: float
    y1: float
    x2: float
    y2: float
    score: float
    label: int
    tile: Tuple[int, int]
    truncated: bool = False

    def area(self) -> float:
        return max(0.0, self.x2 - self.x1) * max(0.0, self.y2 - self.y1)


def intersection(a: Box, b: Box) -> float:
    return max(0.0, min(a.x2, b.x2) - max(a.x1, b.x1)) * max(0.0, min(a.y2, b.y2) - max(a.y1, b.y1))


def iou(a: Box, b: Box) -> float:
    shared = intersection(a, b)
    union = a.area() + b.area() - shared
    return shared / union if union > 0 else 0.0


def place(raw: Box, window: Window, width: int, height: int) -> Box | None:
    """Tile pixels to image pixels, clipped to the window; truncated if a window edge
    inside the image cut it (docs/outputs.md, "Merging across tiles and ranks")."""
    left, top = window.x, window.y
    right, bottom = min(window.x + window.width, width), min(window.y + window.height, height)
    box = Box(max(raw.x1 + left, left), max(raw.y1 + top, top), min(raw.x2 + left, right),
              min(raw.y2 + top, bottom), raw.score, raw.label, (window.row, window.column))
    if not (box.x2 > box.x1 and box.y2 > box.y1):
        return None
    box.truncated = ((left > 0 and box.x1 <= left + EDGE_TOLERANCE)
                     or (right < width and box.x2 >= right - EDGE_TOLERANCE)
                     or (top > 0 and box.y1 <= top + EDGE_TOLERANCE)
                     or (bottom < height and box.y2 >= bottom - EDGE_TOLERANCE))
    return box


def merge(boxes: List[Box], iou_threshold: float = 0.5, class_aware: bool = True,
          containment: float = CONTAINMENT) -> List[Box]:
    ranked = sorted(boxes, key=lambda b: (b.truncated, -b.score, b.x1, b.y1, b.x2, b.y2, b.label, b.tile))
    kept: List[Box] = []
    for candidate in ranked:
        def suppressed_by(k: Box) -> bool:
            if class_aware and k.label != candidate.label:
                return False
            if iou(k, candidate) >= iou_threshold:
                return True
            if not candidate.truncated or k.tile == candidate.tile:
                return False
            return candidate.area() > 0 and intersection(k, candidate) / candidate.area() >= containment
        if not any(suppressed_by(k) for k in kept):
            kept.append(candidate)
    return kept


def detections(network: torch.nn.Module, batch: torch.Tensor, tile: Tuple[int, int]) -> List[Box]:
    """The eager network's boxes for one tile, in tile pixels."""
    with torch.no_grad():
        output = network(list(batch.unbind(0)))
    found = output[1][0] if isinstance(output, tuple) else output[0]
    return [Box(*map(float, xyxy), float(score), int(label), tile)
            for xyxy, score, label in zip(found["boxes"], found["scores"], found["labels"])]


def placed_boxes(network: torch.nn.Module, path: str, tile: int, overlap: int) -> List[Box]:
    """Every tile's boxes in image pixels, before the merge."""
    pixels, _ = read_image(path)
    height, width = pixels.shape[1:]
    placed = []
    for window in tile_grid(width, height, tile, overlap):
        for raw in detections(network, tile_tensor(pixels, window, tile), (window.row, window.column)):
            box = place(raw, window, width, height)
            if box is not None:
                placed.append(box)
    return placed


def owner_along_axis(position: np.ndarray, starts: List[int], side: int) -> np.ndarray:
    """Per position, the index of the window in which it lies farthest from that window's
    two edges on this axis, ties to the earlier window."""
    best_distance = np.full(position.shape, -1)
    owner = np.zeros(position.shape, np.int64)
    for index, start in enumerate(starts):
        inside = (position >= start) & (position < start + side)
        distance = np.minimum(position - start, start + side - 1 - position)
        wins = inside & (distance > best_distance)
        owner[wins] = index
        best_distance[wins] = distance[wins]
    return owner


def segment_image(network: torch.nn.Module, path: str, tile: int, overlap: int) -> Tuple[np.ndarray, np.ndarray]:
    """Per pixel, the class from the tile in which it lies farthest from the tile's edges
    along each axis, ties to the earlier tile (docs/outputs.md, "Overlap rule"); and the
    margin between that tile's two best class scores there (a near-tie no float order
    can decide the same way twice)."""
    pixels, _ = read_image(path)
    height, width = pixels.shape[1:]
    column_owner = owner_along_axis(np.arange(width), window_starts(width, tile, overlap), min(tile, width))
    row_owner = owner_along_axis(np.arange(height), window_starts(height, tile, overlap), min(tile, height))
    classes = np.full((height, width), 255, np.uint8)
    margins = np.full((height, width), np.inf, np.float32)
    for window in tile_grid(width, height, tile, overlap):
        with torch.no_grad():
            scores = network(tile_tensor(pixels, window, tile))["out"][0]
        tile_classes = scores.argmax(0).numpy()[:window.height, :window.width].astype(np.uint8)
        top_two = scores.topk(2, dim=0).values.numpy()[:, :window.height, :window.width]
        rows = slice(window.y, window.y + window.height)
        columns = slice(window.x, window.x + window.width)
        mine = (row_owner[rows, None] == window.row) & (column_owner[None, columns] == window.column)
        classes[rows, columns][mine] = tile_classes[mine]
        margins[rows, columns][mine] = (top_two[0] - top_two[1])[mine]
    return classes, margins
