#!/usr/bin/env python3
"""multigpu_raster's prediction path on one CPU, for bench/run-vs-multigpu-raster.

Written for this benchmark (no code of multigpu_raster is copied; it has no licence),
following what its `mgpr` entry point (src/multi_gpu_raster/inference.py at 68eb8fd)
does, step for step:

- the data: a map-style Dataset over the raster's tiles (its TiledGeoTIFFDataset): the
  tile grid is computed once (rasterio.open for the size; tiles of `tile` px with a
  minimum overlap of 0, as many as cover each axis, their left/top edges spread evenly
  from 0 to extent - tile, so tiles overlap only when the extent is not a multiple of
  the tile; row by row). Each item opens the raster again, reads its window with
  `read(window=..., boundless=True)` and returns float32 [C, tile, tile] divided by
  255 (no mean/std: torchvision's detectors normalise inside);
- a LightningDataModule whose setup() makes that Dataset and whose predict_dataloader()
  is DataLoader(dataset, batch_size, num_workers=workers, pin_memory=True), the default
  collate (a stacked [B, C, H, W] batch);
- a LightningModule holding the torchvision network in eval mode whose forward is the
  network's forward on that batch plus a CUDA memory sample (a no-op on a CPU);
  Lightning's default predict_step calls it;
- pl.Trainer(devices=1, accelerator="cpu", strategy="auto", precision=..., profiler=
  "simple", log_every_n_steps=10, logger=CSVLogger("logs")), with the callbacks Lightning
  adds by default (progress bar, model summary, an idle ModelCheckpoint) and its default
  inference_mode;
- timed: trainer.predict(model, datamodule=dm) alone, as multigpu_raster's "Prediction
  completed in X seconds" (the network is built before the clock starts).

On a CPU multigpu_raster ignores its `precision` setting and always runs "bf16-mixed";
that is this harness's default. --precision 32-true is not something multigpu_raster can
run on a CPU: it is here for the equal-precision comparison.

Where this differs from multigpu_raster, and why:
- weights: multigpu_raster downloads torchvision's pretrained weights ("DEFAULT"); here
  the same architectures (networks.py) get weights from a fixed seed, or --weights;
- data: multigpu_raster's main() builds TiledDataModule(cfg) with fake_data left at its
  default True, so as released it serves random tensors and never reads image_path;
  this harness takes the GeoTIFF branch (fake_data=False), which is what mgpr does;
- models: its main() runs FasterRCNN only; ResNet50 is defined beside it, RetinaNet not
  at all; all three here go through the same LightningModule;
- its main() asks torch.cuda for the device's memory first, which fails on a machine
  without a GPU; skipped here. Hydra is replaced by argparse (outside the timed span);
- threads: multigpu_raster never calls torch.set_num_threads (torch's default: one per
  core); --threads N sets it so that both programs get the same; 0 leaves the default.
  --workers is the DataLoader's num_workers (multigpu_raster's config: 8).
- one hook records when the first and last batches end (the first-batch-excluded rate).

  predict.py --image img.tif --model fasterrcnn --tile 1024 --batch 16 --threads 2
  predict.py --model retinanet --save-weights retinanet.sd   # the seeded state_dict, then stop

Ends with one line:
  RESULT tool=multigpu_raster model=... tile=... batch=... precision=... threads=...
         workers=... tiles=N seconds=S tiles_per_s=R steady_tiles_per_s=R2
seconds: trainer.predict; steady: tiles after the first batch over the time from the
first batch's end to the last one's (nan with a single batch).
"""
import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

PRECISIONS = ("bf16-mixed", "32-true", "16-mixed", "bf16-true")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--image", help="the GeoTIFF (needed unless --save-weights)")
    parser.add_argument("--model", required=True, choices=("resnet50", "fasterrcnn", "retinanet"))
    parser.add_argument("--tile", type=int, default=1024, help="tile side in px (multigpu_raster: 1024)")
    parser.add_argument("--batch", type=int, default=16, help="tiles per batch (multigpu_raster: 16)")
    parser.add_argument("--threads", type=int, default=0, help="torch.set_num_threads; 0: torch's default")
    parser.add_argument("--workers", type=int, default=8, help="DataLoader num_workers (multigpu_raster: 8)")
    parser.add_argument("--precision", default="bf16-mixed", choices=PRECISIONS,
                        help="Lightning precision (multigpu_raster on a CPU: always bf16-mixed)")
    parser.add_argument("--weights", help="a state_dict to load (strict) instead of the seeded weights")
    parser.add_argument("--save-weights", metavar="PATH", help="save the seeded state_dict to PATH and stop")
    parser.add_argument("--log-dir", default="logs", help="CSVLogger's folder (multigpu_raster: logs)")
    return parser.parse_args()


def tile_edges(extent: int, tile: int, min_overlap: int = 0):
    """Left (or top) edges of the tiles covering one axis: as few tiles as cover it with at
    least min_overlap between neighbours, spread evenly from 0 to extent - tile."""
    import numpy as np
    count = 1 if extent <= tile else 1 + math.ceil((extent - tile) / (tile - min_overlap))
    return [int(edge) for edge in np.linspace(0, extent - tile, count).astype(int)]


def main() -> int:
    args = parse_args()
    import lightning.pytorch as pl
    import rasterio
    import torch
    from lightning.pytorch.loggers import CSVLogger
    from rasterio.windows import Window
    from torch.utils.data import DataLoader, Dataset

    import networks

    if args.threads > 0:
        torch.set_num_threads(args.threads)

    network = networks.load(args.model, args.weights) if args.weights else networks.build(args.model)
    if args.save_weights:
        torch.save(network.state_dict(), args.save_weights)
        print(f"saved the {args.model} state_dict (seed {networks.SEED}, torch {torch.__version__}) to "
              f"{args.save_weights}")
        return 0
    if not args.image:
        sys.exit("predict.py: --image is needed")

    class RasterTiles(Dataset):
        def __init__(self, path: str, tile: int):
            self.path, self.tile = path, tile
            with rasterio.open(path) as source:
                columns = tile_edges(source.width, tile)
                rows = tile_edges(source.height, tile)
            self.windows = [(row, column) for row in rows for column in columns]

        def __len__(self):
            return len(self.windows)

        def __getitem__(self, index):
            row, column = self.windows[index]
            with rasterio.open(self.path) as source:
                window = Window.from_slices(rows=slice(row, row + self.tile), cols=slice(column, column + self.tile))
                pixels = source.read(window=window, boundless=True)
                return torch.tensor(pixels, dtype=torch.float32) / 255.0

    class RasterData(pl.LightningDataModule):
        def setup(self, stage=None):
            self.dataset = RasterTiles(args.image, args.tile)

        def predict_dataloader(self):
            return DataLoader(self.dataset, batch_size=args.batch, num_workers=args.workers, pin_memory=True)

    class Predictor(pl.LightningModule):
        def __init__(self, net):
            super().__init__()
            self.model = net
            self.model.eval()
            self.batch_ends = []

        def forward(self, x):
            result = self.model(x)
            self.sample_memory()
            return result

        def sample_memory(self):
            if torch.cuda.is_available():  # multigpu_raster's GPU statistics; none on a CPU
                device = torch.cuda.current_device()
                torch.cuda.memory_allocated(device)
                torch.cuda.max_memory_allocated(device)

        def on_predict_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0):
            self.batch_ends.append((time.perf_counter(), len(batch)))

    module = Predictor(network)
    trainer = pl.Trainer(devices=1, accelerator="cpu", strategy="auto", precision=args.precision,
                         profiler="simple", log_every_n_steps=10, logger=CSVLogger(args.log_dir))
    data = RasterData()

    start = time.perf_counter()
    predictions = trainer.predict(module, datamodule=data)
    seconds = time.perf_counter() - start

    tiles = sum(size for _, size in module.batch_ends)
    if len(predictions) != len(module.batch_ends) or tiles != len(data.dataset):
        sys.exit(f"predict.py: {len(predictions)} batches predicted, {tiles} of {len(data.dataset)} tiles")
    steady = math.nan
    if len(module.batch_ends) > 1:
        (first, first_size), (last, _) = module.batch_ends[0], module.batch_ends[-1]
        steady = (tiles - first_size) / (last - first)
    print(f"Prediction completed in {seconds:.2f} seconds (torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads)")
    print(f"RESULT tool=multigpu_raster model={args.model} tile={args.tile} batch={args.batch} "
          f"precision={args.precision} threads={torch.get_num_threads()} workers={args.workers} tiles={tiles} "
          f"seconds={seconds:.3f} tiles_per_s={tiles / seconds:.4f} steady_tiles_per_s={steady:.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
