#!/usr/bin/env python3
"""Export a torchvision detector or segmenter to the TorchScript file mgpr loads.

mgpr gives a model one float32 batch [B, C, H, W]. torchvision's detectors take a list
of images and, scripted, return a (losses, detections) tuple; its segmenters return a
dict. The wrappers below adapt both, and are what docs/models.md and docs/deepforest.md
show; the tests in tests/torchvision export through this file.

  python3 scripts/mgpr_export.py retinanet retinanet.pt --weights my_state_dict.pt
  python3 scripts/mgpr_export.py fasterrcnn fasterrcnn.pt --random --seed 0

As a module: `from mgpr_export import DetectorForMgpr, SegmenterForMgpr, save_for_mgpr`.
"""
import argparse
import sys
from typing import Dict, List

import torch


class DetectorForMgpr(torch.nn.Module):
    """A torchvision detector (Faster R-CNN, RetinaNet, DeepForest's model) for mgpr."""

    def __init__(self, detector: torch.nn.Module):
        super().__init__()
        self.detector = detector.eval()

    def forward(self, batch: torch.Tensor) -> List[Dict[str, torch.Tensor]]:
        images: List[torch.Tensor] = list(batch.unbind(0))
        return self.detector(images)[1]  # scripted torchvision detectors return (losses, detections)


class SegmenterForMgpr(torch.nn.Module):
    """A torchvision segmenter (DeepLabV3, FCN) returning [B, K, H, W] class scores."""

    def __init__(self, segmenter: torch.nn.Module):
        super().__init__()
        self.segmenter = segmenter.eval()

    def forward(self, batch: torch.Tensor) -> torch.Tensor:
        return self.segmenter(batch)["out"]


def save_for_mgpr(wrapped: torch.nn.Module, path: str) -> torch.jit.ScriptModule:
    """Scripts (not traces: detectors branch on their data) and saves; never frozen."""
    scripted = torch.jit.script(wrapped.eval())
    scripted.save(path)
    return scripted


ARCHITECTURES = ("fasterrcnn", "retinanet", "deeplabv3", "fcn")


def build_torchvision(arch: str, num_classes: int, score_thresh: float, size: int) -> torch.nn.Module:
    """A torchvision network with no pretrained weights (nothing is downloaded)."""
    import torchvision.models.detection as detection
    import torchvision.models.segmentation as segmentation

    none = dict(weights=None, weights_backbone=None, num_classes=num_classes)
    # min_size = max_size = the tile side: the network sees the tile at its own size
    # instead of resizing it to 800 px (slower, and not what a tile is cut for).
    resize = dict(min_size=size, max_size=size) if size > 0 else {}
    if arch == "fasterrcnn":
        return detection.fasterrcnn_resnet50_fpn(**none, box_score_thresh=score_thresh, **resize)
    if arch == "retinanet":
        return detection.retinanet_resnet50_fpn(**none, score_thresh=score_thresh, **resize)
    if arch == "deeplabv3":
        return segmentation.deeplabv3_resnet50(**none, aux_loss=False)
    if arch == "fcn":
        return segmentation.fcn_resnet50(**none, aux_loss=False)
    raise ValueError(f"unknown architecture '{arch}': one of {', '.join(ARCHITECTURES)}")


def wrap(arch: str, network: torch.nn.Module) -> torch.nn.Module:
    return SegmenterForMgpr(network) if arch in ("deeplabv3", "fcn") else DetectorForMgpr(network)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("arch", choices=ARCHITECTURES)
    parser.add_argument("output", help="TorchScript file to write")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--weights", help="a state_dict saved with torch.save(model.state_dict(), path)")
    source.add_argument("--random", action="store_true", help="random weights (for tests)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-classes", type=int, default=91)
    parser.add_argument("--score-thresh", type=float, default=0.05, help="detectors: lowest score returned")
    parser.add_argument("--tile-size", type=int, default=0, help="detectors: run at this side without resizing")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    network = build_torchvision(args.arch, args.num_classes, args.score_thresh, args.tile_size)
    if args.weights:
        try:
            network.load_state_dict(torch.load(args.weights, map_location="cpu"))
        except (OSError, RuntimeError) as failure:
            print(f"mgpr_export: --weights {args.weights}: {failure}", file=sys.stderr)
            return 2
    save_for_mgpr(wrap(args.arch, network), args.output)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
