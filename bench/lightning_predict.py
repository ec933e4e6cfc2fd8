#!/usr/bin/env python3
"""What a user of the Python route runs instead of mgpr, for side-by-side GPU figures.

The approach of multigpu_raster (the Lightning + Hydra project mgpr replaces), written
here from its description, not copied: a LightningModule wrapping a torchvision model,
a map-style Dataset of tiles behind a DataLoader (batch_size, workers, pin_memory=True),
`Trainer.predict` on one GPU with the DDP strategy and Lightning's own mixed precision
("16-mixed", "bf16-mixed"), the simple profiler for where the time goes.

The tiles are mgpr's fake tiles, pixel for pixel (runtime/fake_source.cpp's formula,
the same per-tile delay), so both programs see the same data; the weights come from
one seed, and `--export` saves the same network as TorchScript for mgpr. `--input uint8`
feeds the tiles as a Byte raster's 8-bit samples, as mgpr's dummy_dataset_type=uint8
does, scaled to 0..1 on the device in predict_step; `--input float` (the default) feeds
float32 tiles already scaled, as multigpu_raster's Dataset does.

  lightning_predict.py --model resnet50 --precision 16-mixed --tile 1024 --batch 16
  lightning_predict.py --model resnet50 --precision bf16-mixed --input uint8
  lightning_predict.py --model fasterrcnn --export fasterrcnn.pt   # TorchScript for mgpr

Prints tiles/s for trainer.predict as a whole and after its first batch, the forward
passes' CUDA-event time (one stream: the share of the wall they cover), model-only tiles/s
on a batch already on the GPU, and the profiler's table. Needs torch, torchvision and lightning; nothing is downloaded.
"""
import argparse
import time
from typing import Dict, List

import torch
import torchvision

SEED = 0
PRECISIONS = {"fp32": "32-true", "fp16": "16-mixed", "bf16": "bf16-mixed"}
AUTOCAST = {"32-true": None, "16-mixed": torch.float16, "bf16-mixed": torch.bfloat16}


def build_network(name: str) -> torch.nn.Module:
    """Random weights from one seed (nothing can be downloaded); eval mode."""
    torch.manual_seed(SEED)
    if name == "resnet50":
        net = torchvision.models.resnet50(weights=None)
    elif name == "fasterrcnn":
        net = torchvision.models.detection.fasterrcnn_resnet50_fpn(weights=None, weights_backbone=None)
    elif name == "retinanet":
        net = torchvision.models.detection.retinanet_resnet50_fpn(weights=None, weights_backbone=None)
    else:
        raise SystemExit(f"--model {name}: choose resnet50, fasterrcnn or retinanet")
    return net.eval()


class BatchToList(torch.nn.Module):
    """torchvision's detectors take a list of images and, scripted, return (losses,
    detections); mgpr hands a [B, C, H, W] batch (docs/models.md)."""

    def __init__(self, net: torch.nn.Module):
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor) -> List[Dict[str, torch.Tensor]]:
        return self.net(list(x.unbind(0)))[1]


def export(name: str, path: str) -> None:
    net = build_network(name)
    scripted = torch.jit.script(net if name == "resnet50" else BatchToList(net))
    scripted.save(path)
    print(f"exported {name} (seed {SEED}, torch {torch.__version__}, torchvision {torchvision.__version__}) to {path}")


class FakeTiles(torch.utils.data.Dataset):
    """mgpr's fake tiles: pixel (c, y, x) of tile i is ((x + 2y + 85c + 7i) mod 256) / 255,
    or with RAW the 8-bit level itself, before the division."""

    def __init__(self, count: int, tile: int, delay_s: float, raw: bool = False):
        self.count, self.tile, self.delay_s, self.raw = count, tile, delay_s, raw
        side = torch.arange(tile, dtype=torch.int32)
        channel = torch.arange(3, dtype=torch.int32).view(3, 1, 1)
        self.base = side.view(1, 1, tile) + 2 * side.view(1, tile, 1) + 85 * channel

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int) -> torch.Tensor:
        if self.delay_s > 0:
            time.sleep(self.delay_s)  # storage latency, as mgpr's dummy_dataset_delay
        level = (self.base + 7 * index) % 256
        return level.to(torch.uint8) if self.raw else level.float() / 255.0


def main() -> None:
    import lightning.pytorch as pl
    from lightning.pytorch.strategies import DDPStrategy

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--precision", default="16-mixed", help="32-true, 16-mixed, bf16-mixed (or fp32/fp16/bf16)")
    parser.add_argument("--tile", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--count", type=int, default=512)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds per tile, as dummy_dataset_delay")
    parser.add_argument("--tuned", action="store_true",
                        help="also cudnn.benchmark and channels-last (not Lightning's defaults)")
    parser.add_argument("--input", choices=("float", "uint8"), default="float",
                        help="the tiles the DataLoader yields: float32 in 0..1, or 8-bit scaled on the device")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="cpu: a rehearsal of the script (bench/gpu-check --rehearse), no figures to keep")
    parser.add_argument("--export", metavar="PATH", help="save the network as TorchScript for mgpr and stop")
    args = parser.parse_args()
    if args.export:
        export(args.model, args.export)
        return
    precision = PRECISIONS.get(args.precision, args.precision)
    dtype = AUTOCAST[precision]
    channels_last = torch.channels_last if args.tuned else torch.contiguous_format
    if args.tuned:
        torch.backends.cudnn.benchmark = True

    cuda = args.device == "cuda"
    net = build_network(args.model).to(args.device).to(memory_format=channels_last)

    def synchronize():
        if cuda:
            torch.cuda.synchronize()

    # Model-only: one batch already on the device and scaled, under the autocast Lightning
    # would use.
    batch = FakeTiles(args.batch, args.tile, 0)[0].unsqueeze(0).repeat(args.batch, 1, 1, 1).to(args.device)
    batch = batch.contiguous(memory_format=channels_last)
    batches = (args.count + args.batch - 1) // args.batch
    with torch.inference_mode(), torch.autocast(args.device, dtype=dtype or torch.float32, enabled=dtype is not None):
        for _ in range(3):
            net(batch)
        synchronize()
        started = time.perf_counter()
        for _ in range(batches):
            net(batch)
        synchronize()
        model_s = time.perf_counter() - started
    model_rate = batches * args.batch / model_s

    class Predictor(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = net
            self.events = []
            self.first_batch_done = None
            self.memory_peak = 0

        def predict_step(self, tiles, batch_idx):
            if cuda:
                begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                begin.record()
            if tiles.dtype == torch.uint8:
                # A Byte raster's samples, scaled where mgpr scales them: on the device.
                tiles = tiles.float().div_(255.0)
            output = self.net(tiles.contiguous(memory_format=channels_last))
            if cuda:
                end.record()
                self.events.append((begin, end))
                self.memory_peak = max(self.memory_peak, torch.cuda.max_memory_allocated())
            if batch_idx == 0:
                synchronize()
                self.first_batch_done = time.perf_counter()
            return output

    predictor = Predictor()
    loader = torch.utils.data.DataLoader(FakeTiles(args.count, args.tile, args.delay, raw=args.input == "uint8"),
                                         batch_size=args.batch, num_workers=args.workers, pin_memory=cuda)
    strategy = DDPStrategy(find_unused_parameters=False) if cuda else "auto"
    trainer = pl.Trainer(accelerator="gpu" if cuda else "cpu", devices=1, strategy=strategy,
                         precision=precision, profiler="simple", logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False)
    started = time.perf_counter()
    trainer.predict(predictor, dataloaders=loader, return_predictions=True)
    synchronize()
    ended = time.perf_counter()
    busy_s = sum(b.elapsed_time(e) for b, e in predictor.events[1:]) / 1000
    steady_s = ended - predictor.first_batch_done
    steady_tiles = args.count - args.batch
    label = (f"{args.model} {precision} tile {args.tile} batch {args.batch} workers {args.workers} delay {args.delay} "
             f"input {args.input}")
    label += " tuned (cudnn.benchmark, channels-last)" if args.tuned else ""
    print(f"lightning model-only: {batches * args.batch} tiles in {model_s:.2f} s = {model_rate:.2f} tiles/s ({label})")
    print(f"lightning trainer.predict: {args.count} tiles in {ended - started:.2f} s = "
          f"{args.count / (ended - started):.2f} tiles/s (whole call, DataLoader workers' start included)")
    print(f"lightning steady: {steady_tiles} tiles in {steady_s:.2f} s = {steady_tiles / steady_s:.2f} tiles/s "
          f"(after the first batch); forward passes' CUDA-event time {100 * busy_s / steady_s:.1f}% of it; "
          f"steady / model-only = {steady_tiles / steady_s / model_rate:.3f}", flush=True)
    if cuda:
        print(f"lightning memory: peak allocated {predictor.memory_peak / 2**30:.2f} GiB, "
              f"reserved {torch.cuda.memory_reserved() / 2**30:.2f} GiB, card used "
              f"{(torch.cuda.mem_get_info()[1] - torch.cuda.mem_get_info()[0]) / 2**30:.2f} GiB")

if __name__ == "__main__":
    main()
