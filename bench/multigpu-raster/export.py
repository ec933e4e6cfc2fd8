#!/usr/bin/env python3
"""The TorchScript file mgpr runs, from the same state_dict predict.py uses.

mgpr is built with Debian's LibTorch 1.13, which cannot load TorchScript saved by the
venv's torch 2.7; so predict.py (torch 2.7) saves the seeded state_dict, and this runs
under Debian's python3 (torch 1.13, torchvision 0.14), loads it into the same
architecture (networks.py, strict: every key) and scripts it as docs/models.md says:
resnet50 as it is ([B, 3, H, W] -> [B, 1000] logits, task=classify), the detectors
through scripts/mgpr_export.py's DetectorForMgpr ([B, 3, H, W] -> a list of dicts with
boxes, scores, labels, task=detect; torchvision's operators then come from
model_libraries=<torchvision>/_C.so, which this prints on its last line).

  /usr/bin/python3 export.py fasterrcnn fasterrcnn.sd fasterrcnn.pt
"""
import os
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
sys.path.insert(0, str(here))
sys.path.insert(0, str(here.parent.parent / "scripts"))

import torch  # noqa: E402
import torchvision  # noqa: E402

import networks  # noqa: E402
from mgpr_export import DetectorForMgpr, save_for_mgpr  # noqa: E402


def main() -> int:
    if len(sys.argv) != 4 or sys.argv[1] not in networks.MODELS:
        print(__doc__, file=sys.stderr)
        return 2
    name, weights, output = sys.argv[1:]
    network = networks.load(name, weights)
    wrapped = network if networks.TASKS[name] == "classify" else DetectorForMgpr(network)
    partial = output + ".partial"
    save_for_mgpr(wrapped, partial)
    os.replace(partial, output)
    print(f"exported {name} from {weights} (torch {torch.__version__}, torchvision {torchvision.__version__}) "
          f"to {output}")
    print(next(Path(torchvision.__file__).parent.glob("_C*.so")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
