"""The three networks of the comparison, built the same way under both Pythons.

Imported by predict.py (the venv: torch 2.7, torchvision 0.22) and by export.py
(Debian's python3: torch 1.13, torchvision 0.14, the generation mgpr is built with).

multigpu_raster builds torchvision's models with weights="DEFAULT". Those weights are
downloaded, which this benchmark never does, so the networks here have the pretrained
models' exact architecture with random weights from a fixed seed:
- resnet50: torchvision.models.resnet50, 1000 classes (what weights="DEFAULT" gives);
- fasterrcnn, retinanet: the *_resnet50_fpn detectors with 91 classes and, as torchvision
  builds them whenever weights are given, FrozenBatchNorm2d in the backbone and 3
  trainable layers (weights=None alone would give plain BatchNorm2d: another module
  graph and other state_dict keys). Every other setting (score threshold 0.05, resize to
  min_size 800 / max_size 1333, 100 detections) is torchvision's default, as in
  multigpu_raster. A real state_dict of the pretrained models loads into these.
"""
import torch
import torchvision
from torchvision.models.detection.backbone_utils import _resnet_fpn_extractor
from torchvision.ops import misc as misc_nn_ops
from torchvision.ops.feature_pyramid_network import LastLevelP6P7

MODELS = ("resnet50", "fasterrcnn", "retinanet")
TASKS = {"resnet50": "classify", "fasterrcnn": "detect", "retinanet": "detect"}
SEED = 0
COCO_CLASSES = 91
TRAINABLE_LAYERS = 3  # torchvision's default when weights are given


def _frozen_resnet50() -> torch.nn.Module:
    return torchvision.models.resnet50(weights=None, norm_layer=misc_nn_ops.FrozenBatchNorm2d)


def build(name: str, seed: int = SEED) -> torch.nn.Module:
    """The network `name` in eval mode, its weights drawn after torch.manual_seed(seed)."""
    torch.manual_seed(seed)
    if name == "resnet50":
        net = torchvision.models.resnet50(weights=None)
    elif name == "fasterrcnn":
        backbone = _resnet_fpn_extractor(_frozen_resnet50(), TRAINABLE_LAYERS)
        net = torchvision.models.detection.FasterRCNN(backbone, num_classes=COCO_CLASSES)
    elif name == "retinanet":
        backbone = _resnet_fpn_extractor(_frozen_resnet50(), TRAINABLE_LAYERS, returned_layers=[2, 3, 4],
                                         extra_blocks=LastLevelP6P7(256, 256))
        net = torchvision.models.detection.RetinaNet(backbone, num_classes=COCO_CLASSES)
    else:
        raise ValueError(f"unknown model '{name}': one of {', '.join(MODELS)}")
    return net.eval()


def load(name: str, weights: str) -> torch.nn.Module:
    """The network `name` with the state_dict in `weights` (strict: every key, no extra)."""
    net = build(name)
    net.load_state_dict(torch.load(weights, map_location="cpu"), strict=True)
    return net.eval()
