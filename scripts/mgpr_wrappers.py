"""What mgpr loads: torchvision's networks wrapped to take one batch, saved with their card.

mgpr gives a model one float32 batch [B, C, H, W]. torchvision's detectors take a list
of images and, scripted, return a (losses, detections) tuple; its segmenters return a
dict. The wrappers below adapt both, and are what docs/models.md and docs/deepforest.md
show; save_for_mgpr() scripts one and writes it with its model card (scripts/mgpr_card.py).

As a module: `from mgpr_wrappers import DetectorForMgpr, SegmenterForMgpr, save_for_mgpr`
(scripts/mgpr_export.py exports them too).
"""
import json
from typing import Dict, List, Optional

import torch

from mgpr_card import CARD_FILE, check_card


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


def save_for_mgpr(wrapped: torch.nn.Module, path: str, card: Optional[dict] = None) -> torch.jit.ScriptModule:
    """Scripts (not traces: detectors branch on their data) and saves; never frozen.

    With `card` (a dict, e.g. from model_card()), the file carries it as the extra file
    mgpr.json, which mgpr reads for its defaults and `mgpr --model-info` shows.
    """
    scripted = torch.jit.script(wrapped.eval())
    extra = {CARD_FILE: json.dumps(check_card(card), indent=2) + "\n"} if card is not None else {}
    torch.jit.save(scripted, path, _extra_files=extra)
    return scripted
