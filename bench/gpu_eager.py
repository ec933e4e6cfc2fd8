#!/usr/bin/env python3
"""The yardstick for mgpr's boxes on a card: the same detectors, weights and tiles run by
torchvision itself, eager, in fp32, on the same device.

  gpu_eager.py OUT_DIR --tiles 128 [--device cuda] ARCH:TILE:THRESHOLD ...

writes OUT_DIR/ARCH.eager.csv for each detector (bench/gpu_models.py builds the network,
with the weights it exports), in mgpr-bench-pipeline --boxes' form: the boxes scoring at
least THRESHOLD on mgpr's fake float32 tiles 0..N-1 (runtime/source/fake_source.cpp's
formula, pixel for pixel), in batches of 8 as the bench runs them. cuDNN's autotuner stays
off (torch.backends.cudnn.benchmark, as mgpr's cudnn_benchmark=false), so both sides run
the algorithms cuDNN picks without timing; TF32 is PyTorch's default, as LibTorch's: on for
convolutions, off for matrix products.
"""
import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_figures import write_boxes  # noqa: E402
from gpu_models import detector_network  # noqa: E402

BATCH = 8


def fake_tiles(first: int, count: int, side: int, device) -> torch.Tensor:
    """mgpr's fake float32 tiles FIRST..FIRST+COUNT-1: pixel (c, y, x) of tile i is
    ((x + 2y + 85c + 7i) mod 256) / 255."""
    coordinate = torch.arange(side, dtype=torch.int64, device=device)
    channel = torch.arange(3, dtype=torch.int64, device=device).view(3, 1, 1)
    base = coordinate.view(1, 1, side) + 2 * coordinate.view(1, side, 1) + 85 * channel
    index = torch.arange(first, first + count, dtype=torch.int64, device=device).view(count, 1, 1, 1)
    return ((base.unsqueeze(0) + 7 * index) % 256).float() / 255.0


def detect(arch: str, side: int, threshold: float, tiles: int, device) -> tuple:
    """({tile: [(x1, y1, x2, y2, score, label), ...]}, seconds of the forward passes)."""
    network = detector_network(arch).to(device)
    boxes = {}
    seconds = 0.0
    with torch.inference_mode():
        for first in range(0, tiles, BATCH):
            batch = fake_tiles(first, min(BATCH, tiles - first), side, device)
            started = time.perf_counter()
            detections = network(list(batch.unbind(0)))
            if device.type == "cuda":
                torch.cuda.synchronize()
            seconds += time.perf_counter() - started
            for offset, found in enumerate(detections):
                rows = []
                for box, score, label in zip(found["boxes"].tolist(), found["scores"].tolist(),
                                             found["labels"].tolist()):
                    x1, y1, x2, y2 = box
                    if score >= threshold and x2 > x1 and y2 > y1:
                        rows.append((x1, y1, x2, y2, score, int(label)))
                boxes[first + offset] = rows
    return boxes, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("detectors", nargs="+", help="ARCH:TILE:THRESHOLD, e.g. retinanet:800:0.81")
    parser.add_argument("--tiles", type=int, default=128)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = False
    device = torch.device(args.device)
    args.out.mkdir(parents=True, exist_ok=True)
    for spec in args.detectors:
        arch, side, threshold = spec.split(":")
        boxes, seconds = detect(arch, int(side), float(threshold), args.tiles, device)
        write_boxes(args.out / f"{arch}.eager.csv", boxes)
        print(f"eager {arch}: {args.tiles} tiles in {seconds:.2f} s of forward passes "
              f"({args.tiles / seconds:.1f} tiles/s), {sum(map(len, boxes.values()))} boxes, torch {torch.__version__} "
              f"on {device}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
