"""The figures bench/gpu-check reads: boxes compared by IoU, mgpr-bench-pipeline's rates
and ratio, and nvidia-smi's utilisation samples.
"""
import math
import re
import statistics
from datetime import datetime
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


def write_boxes(path: Path, boxes: dict) -> None:
    """BOXES ({tile: [(x1, y1, x2, y2, score, label), ...]}) as mgpr-bench-pipeline --boxes writes them."""
    with open(path, "w") as out:
        out.write("tile,x1,y1,x2,y2,score,label\n")
        for tile in sorted(boxes):
            for x1, y1, x2, y2, score, label in boxes[tile]:
                out.write(f"{tile},{x1:.3f},{y1:.3f},{x2:.3f},{y2:.3f},{score:.5f},{label}\n")


def near_threshold(boxes: dict, tiles, threshold: float, margin: float = 0.01) -> int:
    """How many of BOXES' boxes on TILES score within MARGIN above THRESHOLD: those a
    rounding difference can drop, so a comparison is only as sure as this count is small."""
    return sum(1 for tile in tiles for box in boxes.get(tile, []) if box[4] < threshold + margin)


def match_boxes(reference: dict, candidate: dict, tiles, threshold: float = 0.9, sure_from: float = -1.0):
    """(matched, total): of REFERENCE's boxes on TILES, how many have a box of the same
    label in CANDIDATE's with IoU >= THRESHOLD, each candidate box used once, the
    reference's highest scores first. Boxes the candidate has beyond the reference count
    in the total too, so neither side can drop or invent boxes unseen.

    With SURE_FROM, only boxes scoring at least that count, on either side: those just
    above the score threshold, which a rounding difference moves across it, still pair
    off with boxes of the other side but count for neither."""
    matched = 0
    total = 0
    for tile in tiles:
        wanted = sorted(reference.get(tile, []), key=lambda box: -box[4])
        offered = list(candidate.get(tile, []))
        total += max(sum(box[4] >= sure_from for box in wanted), sum(box[4] >= sure_from for box in offered))
        for box in wanted:
            best, best_iou = None, threshold
            for index, other in enumerate(offered):
                if other[5] == box[5] and iou(box, other) >= best_iou:
                    best, best_iou = index, iou(box, other)
            if best is not None:
                matched += box[4] >= sure_from
                offered.pop(best)
    return matched, total


BENCH_FIGURES = {
    "model_only": re.compile(r"mgpr model-only: ([0-9.]+) tiles/s"),
    "end_to_end": re.compile(r"mgpr end-to-end: ([0-9.]+) tiles/s"),
    "ratio": re.compile(r"mgpr end-to-end / model-only = ([0-9.]+)"),
    "passes": re.compile(r"forward passes ([0-9.]+)% of end-to-end"),
}


def bench_figures(text: str) -> dict:
    found = {}
    for name, pattern in BENCH_FIGURES.items():
        match = pattern.search(text)
        if match:
            found[name] = float(match.group(1))
    return found


def utilisation_samples(text: str) -> list:
    """`nvidia-smi --query-gpu=timestamp,utilization.gpu --format=csv,noheader,nounits`'s
    lines as [(seconds since the epoch, percent), ...]; lines that are not samples are
    skipped. Its timestamps are the machine's local time, as time.time() is read."""
    samples = []
    for line in text.splitlines():
        fields = [field.strip() for field in line.split(",")]
        if len(fields) != 2 or not fields[1].isdigit():
            continue
        try:
            stamp = datetime.strptime(fields[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
        except ValueError:
            continue
        samples.append((stamp, int(fields[1])))
    return samples


def busy_over(samples: list, window) -> tuple:
    """(mean percent, count) of SAMPLES taken inside WINDOW (start, end in seconds since
    the epoch): the share of the window in which a kernel ran. (nan, 0) when none."""
    if not window:
        return math.nan, 0
    inside = [value for stamp, value in samples if window[0] <= stamp <= window[1]]
    return (statistics.mean(inside) if inside else math.nan), len(inside)
