#!/usr/bin/env python3
"""Where Faster R-CNN's time goes on a CPU, stage by stage (docs/benchmarks.md).

Runs in the venv (bench/multigpu-raster/setup-venv: torch 2.7, the LibTorch mgpr's
default build links) on a batch of tiles read from the start of an image:

- eager: the network as multigpu_raster runs it (networks.py, the seeded state_dict),
  NCHW and channels-last, each stage called on the previous stage's output: the
  transform (normalise, resize to 800 px), backbone + FPN, RPN, ROI heads, postprocess;
- frozen: the TorchScript export mgpr runs, frozen, channels-last, the profiling
  executor off, as TileModel runs it on a CPU. A frozen graph cannot be called stage by
  stage, so one call is profiled op by op and the ops' self times are split at the
  boundaries the convolutions' order gives: the ResNet-50 body's 53 (batch norms folded
  into them), the FPN's 8, then the RPN head's 15 (3 on each of 5 levels); the ROI heads
  and postprocessing from the first roi_align on.

Each figure is the fastest of two timed calls after an untimed one, in seconds.

  out/multigpu-raster/venv/bin/python bench/multigpu-raster/stage_split.py \\
      --mode frozen --precision bf16 --tile 1024 --batch 4
"""
import argparse
import sys
import time
from pathlib import Path

import numpy
import rasterio
import torch
import torchvision  # noqa: F401  (registers torchvision's operators for the export)
from rasterio.windows import Window

here = Path(__file__).resolve().parent
sys.path.insert(0, str(here))
import networks  # noqa: E402

OUT = here.parent.parent / "out" / "multigpu-raster"
BODY_CONVOLUTIONS = 53  # ResNet-50: stem, 16 bottlenecks of 3, 4 downsamples
FPN_CONVOLUTIONS = 8  # 4 lateral 1x1, 4 output 3x3


def image_tiles(image: Path, tile: int, batch: int) -> torch.Tensor:
    with rasterio.open(image) as src:
        per_row = src.width // tile
        tiles = [
            src.read([1, 2, 3], window=Window((i % per_row) * tile, (i // per_row) * tile, tile, tile))
            for i in range(batch)
        ]
    return torch.from_numpy(numpy.stack(tiles)).float() / 255


def fastest(call, repeats: int = 2):
    out = call()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        out = call()
        best = min(best, time.perf_counter() - start)
    return best, out


def mixed(bf16: bool):
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16)


def eager(x: torch.Tensor, weights: Path, bf16: bool) -> None:
    net = networks.load("fasterrcnn", str(weights))
    for layout in ("NCHW", "channels-last"):
        if layout == "channels-last":
            net = net.to(memory_format=torch.channels_last)
        images = list(x.unbind(0))
        times = {}
        with torch.inference_mode(), mixed(bf16):
            times["transform"], (image_list, _) = fastest(lambda: net.transform(images))
            batch = image_list.tensors
            if layout == "channels-last":
                batch = batch.contiguous(memory_format=torch.channels_last)
            times["backbone+fpn"], features = fastest(lambda: net.backbone(batch))
            times["rpn"], (proposals, _) = fastest(lambda: net.rpn(image_list, features))
            times["roi_heads"], (detections, _) = fastest(
                lambda: net.roi_heads(features, proposals, image_list.image_sizes))
            sizes = [tuple(t.shape[-2:]) for t in images]
            times["postprocess"], _ = fastest(
                lambda: net.transform.postprocess(detections, image_list.image_sizes, sizes))
            times["whole"], _ = fastest(lambda: net(images))
        print(f"eager {layout}: " + " ".join(f"{k}={v:.2f}" for k, v in times.items()), flush=True)


def frozen(x: torch.Tensor, export: Path, bf16: bool) -> None:
    # Frozen outside autocast, as TileModel does: under it the batch norms are not folded.
    model = torch.jit.freeze(torch.jit.load(str(export)).eval().to(memory_format=torch.channels_last))
    # After freezing: switched off before it, freezing's clone fails in TorchScript's
    # method lookup.
    torch._C._set_graph_executor_optimize(False)
    x = x.contiguous(memory_format=torch.channels_last)
    with torch.inference_mode(), mixed(bf16):
        whole, _ = fastest(lambda: model(x))
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
            model(x)
    events = sorted(profile.events(), key=lambda e: e.time_range.start)
    # Under autocast each convolution is two nested aten::conv2d events: the outer count.
    starts, outer_end = [], -1
    for e in events:
        if e.name == "aten::conv2d" and e.time_range.start >= outer_end:
            starts.append(e.time_range.start)
            outer_end = e.time_range.end
    first_roi_align = min(e.time_range.start for e in events if e.name == "torchvision::roi_align")
    rpn = BODY_CONVOLUTIONS + FPN_CONVOLUTIONS
    bounds = [("transform", 0), ("backbone", starts[0]), ("fpn", starts[BODY_CONVOLUTIONS]), ("rpn", starts[rpn]),
              ("roi_heads+post", first_roi_align), ("", float("inf"))]
    total = sum(e.self_cpu_time_total for e in events)
    print(f"frozen export: whole={whole:.2f} s; profiled call split by stage (self time, share, top ops):")
    for (stage, start), (_, end) in zip(bounds, bounds[1:]):
        ops = {}
        for e in events:
            if start <= e.time_range.start < end:
                ops[e.name] = ops.get(e.name, 0) + e.self_cpu_time_total
        spent = sum(ops.values())
        top = ", ".join(f"{k} {v / 1e6:.2f}" for k, v in sorted(ops.items(), key=lambda kv: -kv[1])[:3])
        print(f"  {stage:15s} {spent / 1e6:6.2f} s {100 * spent / total:5.1f} %   {top}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("eager", "frozen"), required=True)
    parser.add_argument("--precision", choices=("bf16", "fp32"), default="bf16")
    parser.add_argument("--tile", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--image", type=Path, default=OUT / "image-4096.tif")
    parser.add_argument("--weights", type=Path, default=OUT / "weights" / "fasterrcnn.sd")
    parser.add_argument("--export", type=Path, default=OUT / "export" / "fasterrcnn.pt")
    args = parser.parse_args()
    for path in (args.image, args.weights if args.mode == "eager" else args.export):
        if not path.exists():
            print(f"stage_split: {path} does not exist: run bench/run-vs-multigpu-raster once, which makes it",
                  file=sys.stderr)
            return 2
    torch.set_num_threads(args.threads)
    x = image_tiles(args.image, args.tile, args.batch)
    print(f"Faster R-CNN, {args.batch} tiles of {args.tile} px from {args.image.name}, {args.precision}, "
          f"{args.threads} threads")
    bf16 = args.precision == "bf16"
    if args.mode == "eager":
        eager(x, args.weights, bf16)
    else:
        frozen(x, args.export, bf16)
    return 0


if __name__ == "__main__":
    sys.exit(main())
