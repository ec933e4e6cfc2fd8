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
import argparse
import json
import math
import sys
from typing import Dict, List, Optional, Sequence, Union

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


# The model card (common/include/mgpr/model_card.hpp, docs/models.md): its format version,
# the file's name inside the archive, its settings (mgpr's own config keys, same meaning)
# and its free-form description. mgpr refuses any other key.
CARD_VERSION = 1
CARD_FILE = "mgpr.json"
CARD_SETTINGS = ("task", "class_names", "bands", "scale", "mean", "std", "nodata", "tile_size", "overlap", "gsd",
                 "gsd_tolerance", "resampling", "score_threshold", "iou_threshold", "class_aware_nms",
                 "background_class")
CARD_DESCRIPTION = ("name", "version", "licence", "source", "description")
TASKS = ("classify", "detect", "segment")
RESAMPLINGS = ("auto", "nearest", "bilinear", "cubic", "cubicspline", "lanczos", "average", "mode")

Numbers = Union[float, Sequence[float]]


def _number(key: str, value, low: float = -math.inf, high: float = math.inf, below_high: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"model card: {key} must be a number, got {value!r}")
    if value < low or value > high or (below_high and value >= high):
        bound = f"below {high}" if below_high else f"at most {high}"
        raise ValueError(f"model card: {key}={value} must be at least {low} and {bound}")
    return float(value)


def _whole(key: str, value, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"model card: {key} must be a whole number of at least {low}, got {value!r}")
    return value


def _numbers(key: str, value: Numbers, positive: bool = False) -> List[float]:
    values = [value] if isinstance(value, (int, float)) and not isinstance(value, bool) else list(value)
    if not values:
        raise ValueError(f"model card: {key} is empty; leave it out instead")
    checked = [_number(key, item) for item in values]
    if positive and any(item <= 0 for item in checked):
        raise ValueError(f"model card: {key} must be above 0, got {values}")
    return checked


def model_card(*, task: Optional[str] = None, class_names: Optional[Sequence[str]] = None,
               bands: Optional[Sequence[int]] = None, scale: Optional[float] = None, mean: Optional[Numbers] = None,
               std: Optional[Numbers] = None, nodata: Optional[Union[str, float]] = None,
               tile_size: Optional[int] = None, overlap: Optional[int] = None, gsd: Optional[float] = None,
               gsd_tolerance: Optional[float] = None, resampling: Optional[str] = None,
               score_threshold: Optional[float] = None, iou_threshold: Optional[float] = None,
               class_aware_nms: Optional[bool] = None, background_class: Optional[int] = None,
               name: Optional[str] = None, version: Optional[str] = None,
               licence: Optional[str] = None, source: Optional[str] = None,
               description: Optional[str] = None) -> dict:
    """The card as a dict, ready for json.dumps: what is given, checked; None leaves a key out.

    Settings mean what mgpr's keys of the same name mean (docs/models.md): class_names
    are indexed by label value, label 0 first; gsd is the ground resolution the model was
    trained at, in metres per pixel; gsd_tolerance is relative (0.1: 10 %); nodata is
    "none" or the value of missing pixels in every band.
    """
    card: dict = {"mgpr_card": CARD_VERSION}
    for key, value in (("name", name), ("version", version), ("licence", licence), ("source", source),
                       ("description", description)):
        if value is not None:
            card[key] = str(value)
    settings: dict = {}
    if task is not None:
        if task not in TASKS:
            raise ValueError(f"model card: task={task!r} is not one of {', '.join(TASKS)}")
        settings["task"] = task
    if class_names is not None:
        names = [class_names] if isinstance(class_names, str) else list(class_names)
        if not names or not all(isinstance(item, str) and item for item in names):
            raise ValueError(f"model card: class_names must be a list of non-empty names, got {class_names!r}")
        settings["class_names"] = names
    if bands is not None:
        settings["bands"] = [_whole("bands", item, 1) for item in ([bands] if isinstance(bands, int) else bands)]
        if not settings["bands"]:
            raise ValueError("model card: bands is empty; leave it out instead")
    if scale is not None:
        settings["scale"] = _number("scale", scale, low=0)
    if mean is not None:
        settings["mean"] = _numbers("mean", mean)
    if std is not None:
        settings["std"] = _numbers("std", std, positive=True)
    if nodata is not None:
        # mgpr's nodata key is text: "none", or a number read from it.
        text = str(nodata).strip()
        if text != "none":
            try:
                float(text)
            except ValueError:
                raise ValueError(f"model card: nodata={nodata!r} is neither 'none' nor a number") from None
        settings["nodata"] = text
    if tile_size is not None:
        settings["tile_size"] = _whole("tile_size", tile_size, 1)
    if overlap is not None:
        settings["overlap"] = _whole("overlap", overlap, 0)
        if tile_size is not None and overlap >= tile_size:
            raise ValueError(f"model card: overlap={overlap} must be below tile_size={tile_size}")
    if gsd is not None:
        settings["gsd"] = _number("gsd", gsd)
        if settings["gsd"] <= 0:
            raise ValueError(f"model card: gsd={gsd} must be above 0 (metres per pixel)")
    if gsd_tolerance is not None:
        settings["gsd_tolerance"] = _number("gsd_tolerance", gsd_tolerance, low=0, high=1, below_high=True)
    if resampling is not None:
        if resampling not in RESAMPLINGS:
            raise ValueError(f"model card: resampling={resampling!r} is not one of {', '.join(RESAMPLINGS)}")
        settings["resampling"] = resampling
    if score_threshold is not None:
        settings["score_threshold"] = _number("score_threshold", score_threshold, low=0, high=1)
    if iou_threshold is not None:
        settings["iou_threshold"] = _number("iou_threshold", iou_threshold, low=0, high=1)
    if class_aware_nms is not None:
        if not isinstance(class_aware_nms, bool):
            raise ValueError(f"model card: class_aware_nms must be true or false, got {class_aware_nms!r}")
        settings["class_aware_nms"] = class_aware_nms
    if background_class is not None:
        # segment: the class that makes no polygon (polygons=true); -1: none.
        settings["background_class"] = _whole("background_class", background_class, -1)
    card.update((key, settings[key]) for key in CARD_SETTINGS if key in settings)
    return card


def check_card(card: dict) -> dict:
    """Refuses what mgpr would refuse by name: another format version or an unknown key."""
    if not isinstance(card, dict):
        raise ValueError(f"model card: a dict is needed, got {type(card).__name__}")
    if card.get("mgpr_card") != CARD_VERSION:
        raise ValueError(f"model card: \"mgpr_card\": {CARD_VERSION} is needed, got {card.get('mgpr_card')!r}")
    known = {"mgpr_card", "license", *CARD_SETTINGS, *CARD_DESCRIPTION}
    unknown = [key for key in card if key not in known]
    if unknown:
        raise ValueError(f"model card: unknown key(s) {', '.join(unknown)}; mgpr reads only "
                         f"{', '.join(CARD_SETTINGS + CARD_DESCRIPTION)}")
    return card


def save_for_mgpr(wrapped: torch.nn.Module, path: str, card: Optional[dict] = None) -> torch.jit.ScriptModule:
    """Scripts (not traces: detectors branch on their data) and saves; never frozen.

    With `card` (a dict, e.g. from model_card()), the file carries it as the extra file
    mgpr.json, which mgpr reads for its defaults and `mgpr --model-info` shows.
    """
    scripted = torch.jit.script(wrapped.eval())
    extra = {CARD_FILE: json.dumps(check_card(card), indent=2) + "\n"} if card is not None else {}
    torch.jit.save(scripted, path, _extra_files=extra)
    return scripted


ARCHITECTURES = ("fasterrcnn", "retinanet", "deeplabv3", "fcn", "deepforest", "cropmodel")
TASK_OF = {"fasterrcnn": "detect", "retinanet": "detect", "deepforest": "detect", "deeplabv3": "segment",
           "fcn": "segment", "cropmodel": "classify"}

# A crop classifier for classify_model= (docs/outputs.md), as DeepForest's CropModel is one:
# torchvision's ResNet-50 on 224 px crops of RGB scaled to 0..1 and normalised with
# ImageNet's mean and std, each crop resized without keeping its aspect ratio.
CROPMODEL_CARD = dict(task="classify", bands=[1, 2, 3], scale=1 / 255, mean=[0.485, 0.456, 0.406],
                      std=[0.229, 0.224, 0.225], tile_size=224)

# DeepForest's tree crown model (weecology/DeepForest, its default config): a torchvision
# RetinaNet with one class, "Tree" (label 0), trained on 10 cm RGB, predicted in 400 px
# patches overlapping by 5 % and merged by NMS at IoU 0.15 across labels; score_thresh 0.1
# and nms_thresh 0.05 inside the network. It feeds RGB scaled to 0..1; the network's own
# transform normalises with ImageNet's mean and std, so the card has no mean or std.
DEEPFOREST_SCORE_THRESH = 0.1
DEEPFOREST_NMS_THRESH = 0.05
DEEPFOREST_CARD = dict(task="detect", class_names=["Tree"], bands=[1, 2, 3], scale=1 / 255, tile_size=400,
                       overlap=20, gsd=0.1, score_threshold=DEEPFOREST_SCORE_THRESH, iou_threshold=0.15,
                       class_aware_nms=False, name="DeepForest tree crowns", licence="MIT",
                       source="https://github.com/weecology/DeepForest")


def deepforest_card(**changes) -> dict:
    """DeepForest's tree model's card; keyword arguments change or add keys (e.g. version=)."""
    return model_card(**{**DEEPFOREST_CARD, **changes})


def _torchvision_weights(arch: str):
    """torchvision's default weights enum member for arch (its metadata needs no download)."""
    import torchvision.models as classification
    import torchvision.models.detection as detection
    import torchvision.models.segmentation as segmentation
    return {"cropmodel": lambda: classification.ResNet50_Weights.DEFAULT,
            "fasterrcnn": lambda: detection.FasterRCNN_ResNet50_FPN_Weights.DEFAULT,
            "retinanet": lambda: detection.RetinaNet_ResNet50_FPN_Weights.DEFAULT,
            "deeplabv3": lambda: segmentation.DeepLabV3_ResNet50_Weights.DEFAULT,
            "fcn": lambda: segmentation.FCN_ResNet50_Weights.DEFAULT}[arch]()


def architecture_card(arch: str, pretrained: bool = False) -> dict:
    """What the architecture implies, as model_card() arguments (the options' defaults).

    torchvision's detectors normalise inside (their transform), so they take RGB in 0..1;
    its segmenters do not, and torchvision's own weights want ImageNet's mean and std.
    """
    if arch == "deepforest":
        return dict(DEEPFOREST_CARD)
    if arch == "cropmodel":
        defaults = dict(CROPMODEL_CARD)
        if pretrained:
            weights = _torchvision_weights(arch)
            defaults.update(class_names=list(weights.meta["categories"]), source=f"torchvision {weights}")
        return defaults
    defaults: dict = {"task": TASK_OF[arch]}
    if pretrained:
        weights = _torchvision_weights(arch)
        defaults.update(class_names=list(weights.meta["categories"]), bands=[1, 2, 3], scale=1 / 255,
                        source=f"torchvision {weights}")
        if TASK_OF[arch] == "segment":
            defaults.update(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    return defaults


def build_torchvision(arch: str, num_classes: int, score_thresh: float, size: int,
                      pretrained: bool = False) -> torch.nn.Module:
    """A torchvision network; with no pretrained weights unless asked (nothing is downloaded)."""
    import torchvision.models as classification
    import torchvision.models.detection as detection
    import torchvision.models.segmentation as segmentation

    if pretrained:
        none = dict(weights=_torchvision_weights(arch), weights_backbone=None)
    else:
        none = dict(weights=None, weights_backbone=None, num_classes=num_classes)
    # min_size = max_size = the tile side: the network sees the tile at its own size
    # instead of resizing it to 800 px (slower, and not what a tile is cut for).
    resize = dict(min_size=size, max_size=size) if size > 0 else {}
    if arch == "cropmodel":
        if pretrained:
            return classification.resnet50(weights=_torchvision_weights(arch))
        return classification.resnet50(weights=None, num_classes=num_classes)
    if arch == "fasterrcnn":
        return detection.fasterrcnn_resnet50_fpn(**none, box_score_thresh=score_thresh, **resize)
    if arch == "retinanet":
        return detection.retinanet_resnet50_fpn(**none, score_thresh=score_thresh, **resize)
    if arch == "deepforest":
        # DeepForest's RetinaNet: torchvision's, one class, its own resizing (800 px) left as is.
        return detection.retinanet_resnet50_fpn(weights=None, weights_backbone=None, num_classes=num_classes,
                                                score_thresh=score_thresh, nms_thresh=DEEPFOREST_NMS_THRESH)
    if arch in ("deeplabv3", "fcn"):
        # torchvision's own weights come with the auxiliary head; mgpr uses "out" only.
        build = segmentation.deeplabv3_resnet50 if arch == "deeplabv3" else segmentation.fcn_resnet50
        network = build(**none, aux_loss=pretrained)
        network.aux_classifier = None
        return network
    raise ValueError(f"unknown architecture '{arch}': one of {', '.join(ARCHITECTURES)}")


def wrap(arch: str, network: torch.nn.Module) -> torch.nn.Module:
    """What mgpr loads: a classifier as it is ([B, K] logits), the others wrapped."""
    if TASK_OF.get(arch) == "classify":
        return network.eval()
    return SegmenterForMgpr(network) if TASK_OF.get(arch) == "segment" else DetectorForMgpr(network)


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


def _card_from_options(args: argparse.Namespace, num_classes: int) -> dict:
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
    return model_card(**settings)


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
    save_for_mgpr(wrap(args.arch, network), args.output, card_dict)
    print(f"wrote {args.output}" + ("" if card_dict is None else f" with its model card ({CARD_FILE})"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
