"""The figures bench/gpu-check reads: boxes compared by IoU, mgpr-bench-pipeline's rates
and ratio, and nvidia-smi dmon's utilisation samples.
"""
import re
import statistics
from pathlib import Path


def iou(a, b) -> float:
    """Intersection over union of two (x1, y1, x2, y2) boxes."""
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    if width <= 0 or height <= 0:
        return 0.0
    inter = width * height
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def read_boxes(path: Path) -> dict:
    """mgpr-bench-pipeline --boxes FILE: {tile: [(x1, y1, x2, y2, score, label), ...]}."""
    boxes = {}
    lines = path.read_text().splitlines()
    for line in lines[1:]:
        tile, x1, y1, x2, y2, score, label = line.split(",")
        boxes.setdefault(int(tile), []).append((float(x1), float(y1), float(x2), float(y2), float(score), int(label)))
    return boxes


def match_boxes(reference: dict, candidate: dict, tiles, threshold: float = 0.9):
    """(matched, total): of REFERENCE's boxes on TILES, how many have a box of the same
    label in CANDIDATE's with IoU >= THRESHOLD, each candidate box used once, the
    reference's highest scores first. Boxes the candidate has beyond the reference count
    in the total too, so neither side can drop or invent boxes unseen."""
    matched = 0
    total = 0
    for tile in tiles:
        wanted = sorted(reference.get(tile, []), key=lambda box: -box[4])
        offered = list(candidate.get(tile, []))
        total += max(len(wanted), len(offered))
        for box in wanted:
            best, best_iou = None, threshold
            for index, other in enumerate(offered):
                if other[5] == box[5] and iou(box, other) >= best_iou:
                    best, best_iou = index, iou(box, other)
            if best is not None:
                matched += 1
                offered.pop(best)
    return matched, total


BENCH_FIGURES = {
    "model_only": re.compile(r"mgpr model-only: ([0-9.]+) tiles/s"),
    "end_to_end": re.compile(r"mgpr end-to-end: ([0-9.]+) tiles/s"),
    "ratio": re.compile(r"mgpr end-to-end / model-only = ([0-9.]+)"),
    "busy": re.compile(r"busy ([0-9.]+)% of end-to-end"),
}


def bench_figures(text: str) -> dict:
    found = {}
    for name, pattern in BENCH_FIGURES.items():
        match = pattern.search(text)
        if match:
            found[name] = float(match.group(1))
    return found


def dmon_busy(text: str) -> list:
    """The `sm` column of `nvidia-smi dmon -s u` (percent busy, one sample a second)."""
    column = None
    samples = []
    for line in text.splitlines():
        fields = line.lstrip("#").split()
        if line.startswith("#") and "sm" in fields:
            column = fields.index("sm")
            continue
        if column is not None and not line.startswith("#") and len(fields) > column and fields[column].isdigit():
            samples.append(int(fields[column]))
    return samples


def busy_while_running(samples: list) -> float:
    """The median of the samples from the first busy one to the last: start-up (the
    model's load, cuDNN's choices) and the exit are not the loop."""
    busy = [i for i, value in enumerate(samples) if value > 0]
    if not busy:
        return 0.0
    return statistics.median(samples[busy[0]:busy[-1] + 1])
