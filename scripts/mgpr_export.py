#!/usr/bin/env python3
"""Export a torchvision detector or segmenter to the TorchScript file mgpr loads, with its card.

mgpr gives a model one float32 batch [B, C, H, W]. torchvision's detectors take a list
of images and, scripted, return a (losses, detections) tuple; its segmenters return a
dict. The wrappers below adapt both, and are what docs/models.md and docs/deepforest.md
show; the tests in tests/torchvision export through this file.

The file written carries a model card (docs/models.md, "Model cards"): the extra file
mgpr.json inside the TorchScript archive, holding the settings mgpr would otherwise need
as keys (task, class_names, tile_size, gsd, ...) and a description. What the architecture
implies is filled in (task; for torchvision's own weights, their class names and
normalisation; for deepforest, DeepForest's tree model's settings); the rest is what the
options give.

  python3 scripts/mgpr_export.py retinanet retinanet.pt --weights my_state_dict.pt \\
      --classes Tree --gsd 0.1 --tile-size 400 --overlap 20 --name "My trees" --version 1
  python3 scripts/mgpr_export.py fasterrcnn fasterrcnn.pt --pretrained    # torchvision's COCO weights
  python3 scripts/mgpr_export.py deepforest trees.pt --weights deepforest_state_dict.pt
  python3 scripts/mgpr_export.py fasterrcnn fasterrcnn.pt --random --seed 0 --no-card

As a module: `from mgpr_export import DetectorForMgpr, SegmenterForMgpr, model_card, save_for_mgpr`.
"""
# The docstring above is the program's --help. The code lives in three modules beside
# this file, by idea: mgpr_card.py (the card: its keys, model_card(), check_card()),
# mgpr_wrappers.py (the wrappers and save_for_mgpr()) and mgpr_torchvision.py (the
# architectures: build_torchvision(), wrap(), what each implies for the card). This file
# is the command line, and exports the three's names to the callers that import it.
import argparse
import sys
from typing import Optional

import torch

from mgpr_card import (
    CARD_DESCRIPTION,
    CARD_FILE,
    CARD_SETTINGS,
    CARD_VERSION,
    RESAMPLINGS,
    TASKS,
    check_card,
    model_card,
)
from mgpr_torchvision import (
    ARCHITECTURES,
    CROPMODEL_CARD,
    DEEPFOREST_CARD,
    DEEPFOREST_NMS_THRESH,
    DEEPFOREST_SCORE_THRESH,
    TASK_OF,
    architecture_card,
    build_torchvision,
    deepforest_card,
    wrap,
)
from mgpr_wrappers import DetectorForMgpr, SegmenterForMgpr, save_for_mgpr

# What `import mgpr_export` has always offered (docs/models.md, docs/deepforest.md, the tests
# and bench/gpu_models.py use it), from the modules that now hold it.
__all__ = ["ARCHITECTURES", "CARD_DESCRIPTION", "CARD_FILE", "CARD_SETTINGS", "CARD_VERSION", "CROPMODEL_CARD",
           "DEEPFOREST_CARD", "DEEPFOREST_NMS_THRESH", "DEEPFOREST_SCORE_THRESH", "RESAMPLINGS", "TASKS", "TASK_OF",
           "DetectorForMgpr", "SegmenterForMgpr", "architecture_card", "build_torchvision", "check_card",
           "deepforest_card", "main", "model_card", "save_for_mgpr", "set_detection_limits", "wrap"]


def _state_dict(path: str) -> dict:
    """A state dict, or the one inside a Lightning checkpoint (DeepForest's .ckpt: keys 'model.*')."""
    loaded = torch.load(path, map_location="cpu")
    if isinstance(loaded, dict) and isinstance(loaded.get("state_dict"), dict):
        loaded = loaded["state_dict"]
        if any(key.startswith("model.") for key in loaded):
            loaded = {key[len("model."):]: value for key, value in loaded.items() if key.startswith("model.")}
    return loaded


def _true_or_false(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"'{text}' is not true or false")


def _card_from_options(args: argparse.Namespace, num_classes: int, limits: Optional[dict] = None) -> dict:
    given = dict(class_names=args.classes, bands=args.bands, scale=args.scale, mean=args.mean, std=args.std,
                 nodata=args.nodata, tile_size=args.tile_size or None, overlap=args.overlap, gsd=args.gsd,
                 gsd_tolerance=args.gsd_tolerance, resampling=args.resampling,
                 score_threshold=args.score_threshold, iou_threshold=args.iou_threshold,
                 class_aware_nms=args.class_aware_nms, background_class=args.background_class, name=args.name,
                 version=args.version, licence=args.licence, source=args.source, description=args.description)
    settings = architecture_card(args.arch, args.pretrained)
    settings.update((key, value) for key, value in given.items() if value is not None)
    names = settings.get("class_names")
    if names is not None and len(names) != num_classes:
        raise ValueError(f"--classes names {len(names)} classes, the network has {num_classes} "
                         "(--num-classes; names are indexed by label value, label 0 first: Faster R-CNN's label 0 "
                         "is the background)")
    if settings.get("bands") is not None and len(settings["bands"]) != 3:
        raise ValueError(f"--bands names {len(settings['bands'])} bands; torchvision's networks take 3")
    settings.update(limits or {})
    return model_card(**settings)


def set_detection_limits(network: torch.nn.Module, detections_per_img, topk_candidates) -> dict:
    """Sets a torchvision detector's limits where given; returns those it has, as the card records them."""
    heads = getattr(network, "roi_heads", None)  # Faster R-CNN keeps its cap on its ROI heads
    holder = heads if heads is not None and hasattr(heads, "detections_per_img") else network
    limits = {}
    for key, value, owner in (("detections_per_img", detections_per_img, holder),
                              ("topk_candidates", topk_candidates, network)):
        if not hasattr(owner, key):
            if value is not None:
                raise ValueError(f"--{key.replace('_', '-')}: this network has no {key}")
            continue
        if value is not None:
            if value < 1:
                raise ValueError(f"--{key.replace('_', '-')} must be at least 1, got {value}")
            setattr(owner, key, value)
        limits[key] = int(getattr(owner, key))
    return limits


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("arch", choices=ARCHITECTURES)
    parser.add_argument("output", help="TorchScript file to write")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--weights", help="a state_dict saved with torch.save(model.state_dict(), path), "
                        "or a Lightning checkpoint holding one")
    source.add_argument("--pretrained", action="store_true",
                        help="torchvision's own default weights (downloaded; not for deepforest)")
    source.add_argument("--random", action="store_true", help="random weights (for tests)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-classes", type=int, default=None,
                        help="the network's classes (default: as many as --classes, else 91; deepforest 1)")
    parser.add_argument("--score-thresh", type=float, default=None,
                        help="detectors: lowest score the network returns (default 0.05; deepforest 0.1)")
    parser.add_argument("--detections-per-img", type=int, default=None, metavar="N",
                        help="detectors: the most boxes the network returns for a tile (torchvision's default 300); "
                             "dense scenes need more. Recorded in the card: mgpr names the tiles that reach it")
    parser.add_argument("--topk-candidates", type=int, default=None, metavar="N",
                        help="retinanet, deepforest: candidates each feature level keeps before the merge "
                             "(default 1000); recorded in the card")
    parser.add_argument("--tile-size", type=int, default=0,
                        help="the tile side mgpr cuts (card: tile_size); detectors also run at it without resizing")
    card = parser.add_argument_group("model card (docs/models.md): mgpr's keys of the same name")
    card.add_argument("--no-card", action="store_true", help="write no model card")
    card.add_argument("--classes", nargs="+", metavar="NAME", help="class_names, by label value, label 0 first")
    card.add_argument("--gsd", type=float, metavar="METRES", help="ground resolution trained at, metres per pixel")
    card.add_argument("--gsd-tolerance", type=float, metavar="FRACTION",
                      help="relative difference from gsd read without resampling (mgpr's default 0.1)")
    card.add_argument("--resampling", choices=RESAMPLINGS, help="how rasters are resampled to gsd")
    card.add_argument("--overlap", type=int, metavar="PIXELS", help="overlap between tiles")
    card.add_argument("--bands", type=int, nargs="+", metavar="BAND", help="1-based bands fed to the model")
    card.add_argument("--scale", type=float, help="multiplies raw pixel values (e.g. 0.00392156862745098 = 1/255)")
    card.add_argument("--mean", type=float, nargs="+", help="subtracted after scaling, per band or one for all")
    card.add_argument("--std", type=float, nargs="+", help="divides after the mean, per band or one for all")
    card.add_argument("--nodata", help="'none', or the value of missing pixels in every band")
    card.add_argument("--score-threshold", type=float, help="detect: boxes scoring below are dropped by mgpr")
    card.add_argument("--iou-threshold", type=float, help="detect: IoU at which mgpr merges boxes across tiles")
    card.add_argument("--class-aware-nms", type=_true_or_false, metavar="true|false",
                      help="detect: only boxes of one label suppress each other")
    card.add_argument("--background-class", type=int,
                      help="segment: the class value that makes no polygon with polygons=true (-1: none)")
    card.add_argument("--name")
    card.add_argument("--version")
    card.add_argument("--licence", "--license", dest="licence")
    card.add_argument("--source", help="where the model comes from (a URL, a paper)")
    card.add_argument("--description")
    args = parser.parse_args()
    if args.pretrained and args.arch == "deepforest":
        parser.error("--pretrained: torchvision has no DeepForest weights; give --weights")

    default_classes = 1 if args.arch == "deepforest" else 91
    if args.pretrained:
        default_classes = len(architecture_card(args.arch, True)["class_names"])
    num_classes = args.num_classes or (len(args.classes) if args.classes else default_classes)
    score_thresh = args.score_thresh
    if score_thresh is None:
        score_thresh = DEEPFOREST_SCORE_THRESH if args.arch == "deepforest" else 0.05
    try:
        card_dict = None if args.no_card else _card_from_options(args, num_classes)
    except ValueError as failure:
        print(f"mgpr_export: {failure}", file=sys.stderr)
        return 2

    torch.manual_seed(args.seed)
    network = build_torchvision(args.arch, num_classes, score_thresh, args.tile_size, args.pretrained)
    if args.weights:
        try:
            network.load_state_dict(_state_dict(args.weights))
        except (OSError, RuntimeError) as failure:
            print(f"mgpr_export: --weights {args.weights}: {failure}", file=sys.stderr)
            return 2
    try:
        limits = set_detection_limits(network, args.detections_per_img, args.topk_candidates)
    except ValueError as failure:
        print(f"mgpr_export: {failure}", file=sys.stderr)
        return 2
    if card_dict is not None:
        card_dict = _card_from_options(args, num_classes, limits)  # the limits in the card's own order
    save_for_mgpr(wrap(args.arch, network), args.output, card_dict)
    print(f"wrote {args.output}" + ("" if card_dict is None else f" with its model card ({CARD_FILE})"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
