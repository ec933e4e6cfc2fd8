#!/usr/bin/env python3
"""Stand-ins for the programs the benchmark drivers run, for their tests: what each
prints and writes is the shape of the real program's, at no cost. Which program this
is comes from the name it is called by (the tests link it under each name):

  mgpr, mgpr-test-image                       the build's programs
  python (the venv's), debian-python          predict.py, export.py and -c lookups

Every call is appended to $STUB_CALLS, one line, so tests can check the order of runs.
$STUB_FAIL: a word; an mgpr run whose arguments contain it fails as mgpr does.
"""
import json
import os
import sys
import time
from pathlib import Path


def log_call(name, arguments):
    calls = os.environ.get("STUB_CALLS")
    if calls:
        with open(calls, "a") as file:
            file.write(" ".join([name, *arguments]) + "\n")


def keys(arguments):
    return dict(argument.split("=", 1) for argument in arguments if "=" in argument)


def mgpr(arguments):
    if arguments == ["--version"]:
        print("mgpr 0.9.0 (LibTorch 2.7.0, GDAL 3.6.2)")
        return 0
    settings = keys(arguments)
    fail = os.environ.get("STUB_FAIL")
    if fail and any(fail in argument for argument in arguments):
        print(f"mgpr: error: {fail} refused by the stub", file=sys.stderr)
        return 1
    side = int(Path(arguments[0]).read_text())
    tile = int(settings["tile_size"])
    tiles = (side // tile) ** 2
    ranks = int(settings.get("gpus", "1"))
    precision = settings.get("precision", "auto")
    why = " (auto: native amx_bf16)" if precision == "auto" else ""
    shown = "bf16" if precision == "auto" else precision
    print(f"#   {tiles} tiles of {tile} px, model {settings['model']} on cpu in {shown}{why}, channels-last")
    time.sleep(0.05)
    log_dir = Path(os.environ["MGPR_LOG_DIR"])
    log_dir.mkdir(parents=True, exist_ok=True)
    for rank in range(ranks):
        share = tiles // ranks + (1 if rank < tiles % ranks else 0)
        summary = {"rank": rank, "status": "ok", "error": "", "tiles": share, "elapsed_s": 0.04,
                   "model_s": 0.03, "read_s": 0.01, "data_wait_s": 0.001,
                   "timeline": [[0.01, min(share, 2), 0.0], [0.04, share, 0.001]]}
        (log_dir / f"rank-{rank}.json").write_text(json.dumps(summary))
    print("Prediction completed in 0.05 seconds")
    return 0


def test_image(arguments):
    Path(arguments[0]).write_text(arguments[arguments.index("--size") + 1])
    return 0


def python(arguments):
    if arguments[0] == "-c":
        print("stub 1.0")
        return 0
    script, options = Path(arguments[0]).name, arguments[1:]
    if script == "predict.py" and "--save-weights" in options:
        Path(options[options.index("--save-weights") + 1]).write_text("weights")
        return 0
    if script == "predict.py":
        side = int(Path(options[options.index("--image") + 1]).read_text())
        tile = int(options[options.index("--tile") + 1])
        tiles = (side // tile) ** 2
        time.sleep(0.1)
        print(f"RESULT tool=multigpu_raster tiles={tiles} seconds=0.080 tiles_per_s={tiles / 0.08:.4f} "
              f"steady_tiles_per_s=nan")
        return 0
    if script == "export.py":
        model, _weights, output = options
        Path(output).write_text("torchscript")
        print(f"exported {model}")
        print("/usr/lib/python3/dist-packages/torchvision/_C.so")
        return 0
    print(f"stub python: {arguments}", file=sys.stderr)
    return 2


def main():
    name, arguments = Path(sys.argv[0]).name, sys.argv[1:]
    log_call(name, arguments)
    programs = {"mgpr": mgpr, "mgpr-test-image": test_image, "python": python, "debian-python": python}
    return programs[name](arguments)


if __name__ == "__main__":
    sys.exit(main())
