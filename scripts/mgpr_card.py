"""The model card mgpr reads: the extra file mgpr.json inside a TorchScript archive.

Its format version, its file name, the settings it may hold (mgpr's own configuration
keys, with the same meaning) and its free-form description, as common/src/model_card.cpp
reads them (tests/unit/model_card_keys_check.py holds the two lists equal); model_card()
writes a card and check_card() refuses what mgpr would refuse. Nothing here needs torch.

As a module: `from mgpr_card import model_card, check_card` (scripts/mgpr_export.py
exports both too).
"""
import math
from typing import List, Optional, Sequence, Union

# The model card (common/include/mgpr/model_card.hpp, docs/models.md): its format version,
# the file's name inside the archive, its settings (mgpr's own config keys, same meaning)
# and its free-form description. mgpr refuses any other key.
CARD_VERSION = 1
CARD_FILE = "mgpr.json"
CARD_SETTINGS = ("task", "class_names", "bands", "scale", "mean", "std", "nodata", "tile_size", "overlap", "gsd",
                 "gsd_tolerance", "resampling", "score_threshold", "iou_threshold", "class_aware_nms",
                 "background_class")
# What describes the model: free-form text, and a detector's limits (whole numbers: the
# most boxes it returns for a tile, and a feature level's candidates), which mgpr counts
# its tiles against.
CARD_DESCRIPTION = ("name", "version", "licence", "source", "description", "detections_per_img", "topk_candidates")
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
               description: Optional[str] = None, detections_per_img: Optional[int] = None,
               topk_candidates: Optional[int] = None) -> dict:
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
    for key, value in (("detections_per_img", detections_per_img), ("topk_candidates", topk_candidates)):
        if value is not None:
            card[key] = _whole(key, value, 1)
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

