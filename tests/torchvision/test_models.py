#!/usr/bin/env python3
"""The torchvision models the tests export, one definition for every test that needs one.

Random weights (nothing is downloaded), a fixed seed, thresholds that leave clear boxes.
As a program (the real-cluster test uses it):

  test_models.py ARCH OUTPUT --tile N --libtorch VERSION

writes OUTPUT and prints the operators library to name in model_libraries; exits 77
(skipped) with the reason when this Python cannot export for mgpr's LibTorch.
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


def skip_reason(libtorch: str):
    try:
        import torch
        import torchvision  # noqa: F401
        from osgeo import gdal  # noqa: F401
    except ImportError as missing:
        return f"{sys.executable} lacks {missing.name} (scripts/install-deps installs python3-torchvision, python3-gdal)"
    generation = ".".join(torch.__version__.split(".")[:2])
    wanted = ".".join(libtorch.split(".")[:2])
    if generation != wanted:
        return (f"{sys.executable} has torch {torch.__version__}, mgpr is built with LibTorch {libtorch}: "
                "torchvision's operators must be built for mgpr's LibTorch")
    return None


def operators_library() -> str:
    import torchvision
    return str(next(Path(torchvision.__file__).parent.glob("_C*.so")))


def export(arch: str, folder: Path, tile: int):
    """Saves folder/<arch>.pt, scripted; returns the eager network with the same weights."""
    import torch
    import mgpr_export
    torch.manual_seed(SEED)
    network = mgpr_export.build_torchvision(arch, CLASSES[arch], SCORE_THRESH[arch], tile).eval()
    if arch == "retinanet":
        # Its classifier starts at a prior of 0.01 for every class, so random weights score
        # every anchor alike (within 1e-6: float noise would pick the boxes). Wider weights
        # spread the scores, and the threshold keeps the clear ones.
        torch.nn.init.normal_(network.head.classification_head.cls_logits.weight, std=0.2)
    mgpr_export.save_for_mgpr(mgpr_export.wrap(arch, network), str(folder / f"{arch}.pt"))
    return network


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("arch", choices=sorted(CLASSES))
    parser.add_argument("folder", help="writes <folder>/<arch>.pt")
    parser.add_argument("--tile", type=int, required=True)
    parser.add_argument("--libtorch", required=True)
    args = parser.parse_args()
    reason = skip_reason(args.libtorch)
    if reason:
        print(f"SKIPPED: {reason}")
        sys.exit(SKIPPED)
    export(args.arch, Path(args.folder), args.tile)
    print(operators_library())
