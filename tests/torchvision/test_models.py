#!/usr/bin/env python3
"""The torchvision models the tests export, one definition for every test that needs one.

Random weights (nothing is downloaded), a fixed seed, thresholds that leave clear boxes.
As a program (the real-cluster test uses it):

  test_models.py ARCH OUTPUT --tile N --libtorch VERSION [--operators LIBRARY]

writes OUTPUT and prints the operators library to name in model_libraries; exits 77
(skipped) with the reason when this Python cannot export for mgpr's LibTorch.

The operators library must be built for mgpr's LibTorch. --operators names the one the
build made (cmake/TorchvisionOps.cmake, for PyTorch 2.x's LibTorch); then any torch up
to mgpr's may export, as TorchScript files load in later LibTorch versions. Without it,
this Python's own torchvision/_C.so is used, which needs this torch to be mgpr's
LibTorch generation (Debian's python3-torch with Debian's libtorch-dev).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "scripts"))

SKIPPED = 77
SEED = 7
TIE = 1e-5  # class scores closer than this are a tie that float rounding decides
SCORE_THRESH = {"fasterrcnn": 0.02, "retinanet": 0.3, "deeplabv3": 0}
# RetinaNet with two classes (DeepForest's tree model has one): boxes mostly share a label,
# so the class-aware merge has work, and with this seed both halves of its rule fire.
CLASSES = {"fasterrcnn": 91, "retinanet": 2, "deeplabv3": 5}


def _generation(version: str):
    return tuple(int(part) for part in version.split("+")[0].split(".")[:2])


def skip_reason(libtorch: str, operators: str = ""):
    try:
        import torch
        import torchvision  # noqa: F401
        from osgeo import gdal  # noqa: F401
    except ImportError as missing:
        return (f"{sys.executable} lacks {missing.name} "
                "(scripts/install-deps installs python3-torchvision, python3-gdal)")
    if operators:
        if not Path(operators).is_file():
            return f"the operators library {operators} was not built"
        if _generation(torch.__version__) > _generation(libtorch):
            return (f"{sys.executable} has torch {torch.__version__}, newer than mgpr's LibTorch {libtorch}: "
                    "its TorchScript files may not load there")
        return None
    if _generation(torch.__version__) != _generation(libtorch):
        return (f"{sys.executable} has torch {torch.__version__}, mgpr is built with LibTorch {libtorch}: "
                "torchvision's operators must be built for mgpr's LibTorch (MGPR_TORCHVISION_SOURCE_DIR)")
    return None


def operators_library(operators: str = "") -> str:
    if operators:
        return operators
    import torchvision
    return str(next(Path(torchvision.__file__).parent.glob("_C*.so")))


def export(arch: str, folder: Path, tile: int, detections_per_img: int = 0):
    """Saves folder/<arch>.pt, scripted; returns the eager network with the same weights.

    detections_per_img: the detector's cap, set as a user's own export would (no card).
    """
    import torch

    import mgpr_export
    torch.manual_seed(SEED)
    network = mgpr_export.build_torchvision(arch, CLASSES[arch], SCORE_THRESH[arch], tile).eval()
    if arch == "retinanet":
        # Its classifier starts at a prior of 0.01 for every class, so random weights score
        # every anchor alike (within 1e-6: float noise would pick the boxes). Wider weights
        # spread the scores, and the threshold keeps the clear ones.
        torch.nn.init.normal_(network.head.classification_head.cls_logits.weight, std=0.2)
    if detections_per_img:
        mgpr_export.set_detection_limits(network, detections_per_img, None)
    mgpr_export.save_for_mgpr(mgpr_export.wrap(arch, network), str(folder / f"{arch}.pt"))
    return network


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("arch", choices=sorted(CLASSES))
    parser.add_argument("folder", help="writes <folder>/<arch>.pt")
    parser.add_argument("--tile", type=int, required=True)
    parser.add_argument("--libtorch", required=True)
    parser.add_argument("--operators", default="", help="torchvision's operators built for mgpr's LibTorch")
    args = parser.parse_args()
    reason = skip_reason(args.libtorch, args.operators)
    if reason:
        print(f"SKIPPED: {reason}")
        sys.exit(SKIPPED)
    export(args.arch, Path(args.folder), args.tile)
    print(operators_library(args.operators))
