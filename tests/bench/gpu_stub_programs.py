#!/usr/bin/env python3
"""Stand-ins for what bench/gpu-check's first call runs on the GPU machine, for its tests:
each prints the lines the real program prints that the steps read, at no cost. Which
program this is comes from the name it is called by (the tests link it under each name):

  mgpr, mgpr-bench-pipeline        the carry's programs
  python                           gpu_models.py, gpu_eager.py, lightning_predict.py, -c
  nvidia-smi                       --query-gpu=timestamp,utilization.gpu ... -lms N: a
                                   sample at 90 % every 20 ms until interrupted

Boxes are a function of the tile alone, so every precision's match every other's.
"""
import signal
import sys
import time
from datetime import datetime
from pathlib import Path


def keys(arguments):
    return dict(argument.split("=", 1) for argument in arguments if "=" in argument)


def tile_boxes(tile: int) -> list:
    return [f"{tile},{10 + tile}.000,20.000,{60 + tile}.000,80.000,0.90000,1",
            f"{tile},5.000,5.000,9.000,9.000,0.85000,0"]


def write_boxes(path: str, tiles: int) -> None:
    rows = [row for tile in range(tiles) for row in tile_boxes(tile)]
    Path(path).write_text("tile,x1,y1,x2,y2,score,label\n" + "\n".join(rows) + "\n")


def mgpr(arguments):
    settings = keys(arguments)
    tiles = int(settings.get("dummy_dataset_count", "100"))
    print("# mgpr 0.9.0 | rank   0/1 | local 0 | host stub | device cuda:0 | threads 16 | libtorch 2.11.0 | gdal none")
    print(f"#   {tiles} tiles of 1024 px, model {settings['model']} on cuda:0 in {settings.get('precision', 'fp32')}",
          flush=True)
    time.sleep(0.4)
    print(f"rank 0: done, {tiles} tiles in {tiles // 4} batches, 0.30 s ({tiles / 0.3:.2f} tiles/s)", flush=True)
    time.sleep(0.2)
    return 0


def bench(arguments):
    settings = keys(arguments)
    tiles = int(settings.get("dummy_dataset_count", "100"))
    boxes = next((argument.split("=", 1)[1] for argument in arguments if argument.startswith("--boxes=")), None)
    if boxes:
        write_boxes(boxes, tiles)
    time.sleep(0.4)
    print(f"round 1: model-only {tiles} tiles in 0.10 s = {tiles / 0.1:.2f} tiles/s; end-to-end {tiles} tiles in "
          f"0.30 s = {tiles / 0.3:.2f} tiles/s (forward passes 0.50 s, waited 0.01 s for data, readers busy 0.2 s)",
          flush=True)
    print(f"mgpr model-only: {tiles / 0.1:.2f} tiles/s (median of 1)\nmgpr end-to-end: {tiles / 0.3:.2f} tiles/s "
          f"(median of 1)\nmgpr end-to-end / model-only = 0.333 (tile 1024, ...)\nmgpr device (last round): stub "
          f"forward passes 166.7% of end-to-end (summed over the passes in flight), memory avg 1.00 GiB peak 2.00 GiB "
          f"of 140.00 GiB")
    return 0


def python(arguments):
    if arguments[0] == "-c":
        print("torch 2.11.0 cuda 13.0 cudnn 91900 torchvision 0.26.0\nlibs /nowhere\ncpu x86_64 16\nlightning 2.6.6")
        return 0
    script, options = Path(arguments[0]).name, arguments[1:]
    if script == "gpu_models.py":
        folder = Path(options[0])
        folder.mkdir(parents=True, exist_ok=True)
        for name in options[1:]:
            (folder / f"{name}.pt").write_text("torchscript")
        print(f"exported {' '.join(options[1:])}")
        return 0
    if script == "gpu_eager.py":
        folder = Path(options[0])
        folder.mkdir(parents=True, exist_ok=True)
        tiles = int(options[options.index("--tiles") + 1])
        for spec in options[1:options.index("--tiles")]:
            write_boxes(str(folder / f"{spec.split(':')[0]}.eager.csv"), tiles)
        return 0
    if script == "lightning_predict.py":
        tiles = int(options[options.index("--count") + 1])
        time.sleep(0.4)
        print(f"lightning steady: {tiles} tiles in 0.30 s = {tiles / 0.3 / 2:.2f} tiles/s (after the first batch)",
              flush=True)
        time.sleep(0.2)
        return 0
    print(f"stub python: {arguments}", file=sys.stderr)
    return 2


def nvidia_smi(arguments):
    signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
    while True:
        print(f"{datetime.now().strftime('%Y/%m/%d %H:%M:%S.%f')[:-3]}, 90", flush=True)
        time.sleep(0.02)


def main():
    name, arguments = Path(sys.argv[0]).name, sys.argv[1:]
    programs = {"mgpr": mgpr, "mgpr-bench-pipeline": bench, "python": python, "nvidia-smi": nvidia_smi}
    return programs[name](arguments)


if __name__ == "__main__":
    sys.exit(main())
