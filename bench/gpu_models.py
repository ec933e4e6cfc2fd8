#!/usr/bin/env python3
"""The models bench/gpu-check runs, exported with the GPU machine's own torch and torchvision.

  gpu_models.py DIR           writes DIR/resnet50.pt, retinanet.pt, fasterrcnn.pt, deepforest.pt, cropmodel.pt
  gpu_models.py DIR NAME...   only those named (resnet50, retinanet, fasterrcnn, deepforest, cropmodel)

Nothing can be downloaded there, so the weights are random, from one seed. Random
detector heads score every anchor alike (RetinaNet's prior makes every score about 0.01),
so a comparison of boxes would compare ties; the last classification layer is scaled
here so that scores follow the image and spread over (0, 1), as a trained head's do.
The detectors go through scripts/mgpr_export.py, as a user's would: RetinaNet and
Faster R-CNN at the tile's own size (800 px), DeepForest's RetinaNet with its card and
its own resizing; the crop classifier (cropmodel) as DeepForest's CropModel is one, a
ResNet-50 on 224 px crops, with 54 classes as its genus model has, and its card.
"""
import sys
import time
from pathlib import Path

import torch
import torchvision

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import mgpr_export  # noqa: E402

SEED = 0
DETECTOR_TILE = 800
# How much the last classification layer is scaled: enough that scores spread on mgpr's
# fake tiles, not so much that they saturate at 1 (measured on the CPU with torchvision
# 0.14: RetinaNet's 300 kept boxes score 0.80-0.84, Faster R-CNN's 100 0.91-1.00,
# DeepForest's ~110 0.5-1.00). bench/gpu-check compares only boxes scoring above the
# caps' margins (its score_threshold), whose order a rounding difference cannot change.
HEAD_GAIN = {"retinanet": 2.0, "fasterrcnn": 1.0, "deepforest": 8.0}


def sharpen(layer: torch.nn.Module, gain: float) -> None:
    with torch.no_grad():
        layer.weight.mul_(gain)
        if layer.bias is not None:
            layer.bias.zero_()


def export_resnet50(folder: Path) -> None:
    torch.manual_seed(SEED)
    network = torchvision.models.resnet50(weights=None).eval()
    torch.jit.script(network).save(str(folder / "resnet50.pt"))


# DeepForest's genus crop model classifies 54 genera.
CROP_CLASSES = 54


def export_cropmodel(folder: Path) -> None:
    torch.manual_seed(SEED)
    network = mgpr_export.build_torchvision("cropmodel", CROP_CLASSES, 0.0, 0)
    mgpr_export.save_for_mgpr(mgpr_export.wrap("cropmodel", network), str(folder / "cropmodel.pt"),
                              mgpr_export.model_card(**mgpr_export.CROPMODEL_CARD))


def detector_network(arch: str) -> torch.nn.Module:
    """The detector ARCH as exported, weights and all, in eager form: bench/gpu_eager.py
    runs this one as torchvision's own Python would."""
    torch.manual_seed(SEED)
    if arch == "deepforest":
        network = mgpr_export.build_torchvision("deepforest", 1, mgpr_export.DEEPFOREST_SCORE_THRESH, 0)
    else:
        network = mgpr_export.build_torchvision(arch, 2, 0.05, DETECTOR_TILE)
    if arch == "fasterrcnn":
        sharpen(network.roi_heads.box_predictor.cls_score, HEAD_GAIN[arch])
    else:
        sharpen(network.head.classification_head.cls_logits, HEAD_GAIN[arch])
    return network.eval()


def export_detector(folder: Path, arch: str) -> None:
    card = mgpr_export.deepforest_card() if arch == "deepforest" else None
    mgpr_export.save_for_mgpr(mgpr_export.wrap(arch, detector_network(arch)), str(folder / f"{arch}.pt"), card)


MODELS = ("resnet50", "retinanet", "fasterrcnn", "deepforest", "cropmodel")


def main() -> int:
    folder = Path(sys.argv[1])
    names = sys.argv[2:] or list(MODELS)
    unknown = [name for name in names if name not in MODELS]
    if unknown:
        print(f"gpu_models.py: no model named {' '.join(unknown)}: one of {' '.join(MODELS)}", file=sys.stderr)
        return 2
    folder.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    for name in names:
        if name == "resnet50":
            export_resnet50(folder)
        elif name == "cropmodel":
            export_cropmodel(folder)
        else:
            export_detector(folder, name)
    print(f"exported {' '.join(names)} (torch {torch.__version__}, torchvision {torchvision.__version__}) in "
          f"{time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
