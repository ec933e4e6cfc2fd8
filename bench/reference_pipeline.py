#!/usr/bin/env python3
"""The Python pipeline a user would run instead of mgpr, for side-by-side timing.

multigpu_raster's data path (a rasterio window per tile, the raster reopened per item,
/255 to float), a torch DataLoader with workers, torchvision's ResNet-50 in eval mode
under inference_mode: its Lightning predict loop without Lightning. CPU, fp32 (its CPU
default, bf16-mixed, is ~25x slower on CPUs without avx512_bf16, so fp32 is the fair
baseline). bench/run-cpu-benchmarks runs it, end to end and model-only.

usage: reference_pipeline.py IMAGE TILE BATCH WORKERS THREADS [model-only]
"""
import math
import sys
import time

import rasterio
import torch
import torchvision
from rasterio.windows import Window
from torch.utils.data import DataLoader, Dataset


class Tiles(Dataset):
    def __init__(self, path, tile):
        self.path, self.tile = path, tile
        with rasterio.open(path) as source:
            width, height = source.width, source.height
        self.corners = [(x, y) for y in range(0, height, tile) for x in range(0, width, tile)]

    def __len__(self):
        return len(self.corners)

    def __getitem__(self, index):
        x, y = self.corners[index]
        with rasterio.open(self.path) as source:
            pixels = source.read(window=Window(x, y, self.tile, self.tile), boundless=True)
        return torch.tensor(pixels, dtype=torch.float32) / 255.0


def main():
    if len(sys.argv) not in (6, 7):
        sys.exit(__doc__)
    path, (tile, batch, workers, threads) = sys.argv[1], map(int, sys.argv[2:6])
    model_only = len(sys.argv) > 6 and sys.argv[6] == "model-only"
    torch.set_num_threads(threads)
    model = torchvision.models.resnet50(weights=None).eval()
    tiles = Tiles(path, tile)
    with torch.inference_mode():
        for _ in range(2):  # warm-up
            model(torch.rand(1, 3, tile, tile))
        started = time.perf_counter()
        count = 0
        if model_only:
            inputs = torch.rand(batch, 3, tile, tile)
            for _ in range(math.ceil(len(tiles) / batch)):
                model(inputs)
                count += batch
        else:
            for inputs in DataLoader(tiles, batch_size=batch, num_workers=workers):
                model(inputs)
                count += inputs.shape[0]
        seconds = time.perf_counter() - started
    print(f"reference: {count} tiles in {seconds:.2f} s = {count / seconds:.2f} tiles/s "
          f"({'model-only' if model_only else 'end-to-end'})")


if __name__ == "__main__":
    main()
