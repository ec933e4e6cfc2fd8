"""The torchvision networks scripts/mgpr_export.py writes, and what each implies for its card.

Faster R-CNN, RetinaNet, DeepLabV3, FCN, DeepForest's tree model (a RetinaNet) and a crop
classifier (a ResNet-50), built with random or given weights (nothing is downloaded
unless torchvision's own weights are asked for), wrapped for mgpr (scripts/mgpr_wrappers.py),
and the model card settings each architecture implies (scripts/mgpr_card.py).

As a module: `from mgpr_torchvision import build_torchvision, wrap, deepforest_card`
(scripts/mgpr_export.py exports them too).
"""
import torch

from mgpr_card import model_card
from mgpr_wrappers import DetectorForMgpr, SegmenterForMgpr

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
