#!/usr/bin/env python3
"""Reads one run's figures, and summarises a results file, for bench/run-vs-multigpu-raster.

  collect.py mgpr LOG_DIR        # mgpr's rank summary and stdout -> "tiles own_s loop_s steady"
  collect.py python STDOUT       # predict.py's RESULT line      -> "tiles own_s loop_s steady"
  collect.py summary RESULTS     # medians per model, tile and comparison, and the ratios
  collect.py profile RUN_DIR     # where each mgpr build's time went, from its rank summaries

Plain Python 3, no packages.
"""
import json
import math
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path


def mgpr_run(folder: Path) -> str:
    """own_s: mgpr's "Prediction completed in" (the run from its start: model load and
    check, tile loop, outputs); loop_s: the rank's tile loop; steady: tiles after the
    first batch over the time from its end to the loop's (timeline points)."""
    ranks = sorted((folder / "ranks").glob("rank-*.json"))
    if len(ranks) != 1:
        raise SystemExit(f"collect.py: {folder}/ranks holds {len(ranks)} rank summaries, expected 1")
    rank = json.loads(ranks[0].read_text())
    if rank["status"] != "ok":
        raise SystemExit(f"collect.py: mgpr's rank says {rank['status']}: {rank['error']}")
    found = re.search(r"Prediction completed in ([0-9.]+) seconds", (folder / "stdout").read_text())
    own = float(found.group(1)) if found else math.nan
    points = [p for p in rank.get("timeline", []) if p[1] > 0]
    steady = math.nan
    if points and points[-1][1] > points[0][1] and points[-1][0] > points[0][0]:
        steady = (points[-1][1] - points[0][1]) / (points[-1][0] - points[0][0])
    return f"{rank['tiles']} {own:.3f} {rank['elapsed_s']:.3f} {steady:.4f}"


def python_run(stdout: Path) -> str:
    """own_s = loop_s: trainer.predict; steady from predict.py's batch-end times."""
    lines = [line for line in stdout.read_text().splitlines() if line.startswith("RESULT ")]
    if not lines:
        raise SystemExit(f"collect.py: no RESULT line in {stdout}")
    fields = dict(item.split("=", 1) for item in lines[-1].split()[1:])
    seconds = float(fields["seconds"])
    return f"{fields['tiles']} {seconds:.3f} {seconds:.3f} {float(fields['steady_tiles_per_s']):.4f}"


COMPARISONS = (  # (row name, mgpr's precision, predict.py's precision); None: what precision=auto ran
    ("default", None, "bf16-mixed"),
    ("fp32", "fp32", "32-true"),
    ("bf16", "bf16", "bf16-mixed"),
)


def median(values):
    values = [v for v in values if not math.isnan(v)]
    return statistics.median(values) if values else math.nan


def fmt(value: float, width: int, digits: int) -> str:
    return f"{'n/a':>{width}}" if math.isnan(value) else f"{value:>{width}.{digits}f}"


def summary(results: Path) -> None:
    """RESULTS: lines "model tile tool precision pair wall_s tiles own_s loop_s steady [peak_rss_mib]"
    (results.tsv files from before the peak RSS was recorded have no last field)."""
    runs = defaultdict(list)
    order = []
    defaults = {}  # "# default mgpr=bf16": what precision=auto ran
    for line in results.read_text().splitlines():
        if line.startswith("# default "):
            tool, _, precision = line[len("# default "):].partition("=")
            defaults[tool] = precision
        if not line or line.startswith("#"):
            continue
        model, tile, tool, precision, _pair, wall, tiles, own, loop, steady, *rss = line.split()
        key = (model, int(tile))
        if key not in order:
            order.append(key)
        tiles = int(tiles)
        runs[key + (tool, precision)].append(
            {"wall": tiles / float(wall), "own": tiles / float(own), "steady": float(steady), "tiles": tiles,
             "rss": float(rss[0]) if rss else math.nan})
    ours_tools = [tool for tool in ("mgpr", "mgpr2") if any(key[2] == tool for key in runs)]

    def rate(key, what):
        return median([run[what] for run in runs.get(key, [])])

    def ratio(a, b):
        return a / b if a > 0 and b > 0 else math.nan

    pair = f"{'ours':>8}{'mgr':>8}{'ratio':>7}"
    header = f"{'model':<11}{'tile':>5}  {'compare':<32}{'tiles':>6}  {pair}  {pair}  {pair}  {pair}"
    print("tiles/s, median of the pairs; mgr = multigpu_raster (bench/multigpu-raster/predict.py); "
          "ours = the mgpr build the row names; peak RSS in MiB, each process's own (multigpu_raster's "
          "DataLoader workers are processes of their own, not counted)")
    print(f"{'':<58}{'process wall':-^23}  {'own span':-^23}  {'first batch excluded':-^23}  "
          f"{'peak RSS MiB':-^23}")
    print(header)
    for model, tile in order:
        for tool in ours_tools:
            for name, ours, theirs in COMPARISONS:
                ours = ours or defaults.get(tool, "fp32")
                a, b = runs.get((model, tile, tool, ours)), runs.get((model, tile, "multigpu_raster", theirs))
                if not a or not b:
                    continue
                label = f"{tool} {name} ({ours} vs {theirs})"
                cells = []
                for what in ("wall", "own", "steady", "rss"):
                    x, y = rate((model, tile, tool, ours), what), rate((model, tile, "multigpu_raster", theirs), what)
                    digits = 0 if what == "rss" else 3
                    cells.append(f"{fmt(x, 8, digits)}{fmt(y, 8, digits)}{fmt(ratio(x, y), 7, 2)}")
                print(f"{model:<11}{tile:>5}  {label:<32}{a[0]['tiles']:>6}  " + "  ".join(cells))


def profile(run: Path) -> None:
    """Medians over the pairs of each mgpr run's rank summary: the tile loop split into
    model (forward passes, post-processing on the device included), waiting for tiles
    (reads the reader threads had not finished), and the rest (stacking, converting
    outputs, writing); and the loop against the process's own span and the wall."""
    rows = defaultdict(list)
    for folder in sorted(run.glob("mgpr*-*-*-*-[0-9]*")):
        tool, model, tile, precision, _pair = folder.name.split("-")
        summaries = list((folder / "ranks").glob("rank-*.json"))
        if len(summaries) != 1 or not (folder / "stdout").exists():
            continue
        rank = json.loads(summaries[0].read_text())
        if rank.get("status") != "ok":
            continue
        found = re.search(r"Prediction completed in ([0-9.]+) seconds", (folder / "stdout").read_text())
        rows[(model, int(tile), tool, precision)].append({
            "loop": rank["elapsed_s"], "model": rank["model_s"], "wait": rank["data_wait_s"],
            "read": rank["read_s"], "own": float(found.group(1)) if found else math.nan})
    print("seconds, medians over the pairs; loop = the rank's tile loop; own = mgpr's 'Prediction completed in'")
    print(f"{'model':<11}{'tile':>5}  {'build':<6}{'prec':<5}{'loop':>8}{'model':>8}{'wait':>7}{'rest':>7}"
          f"{'read*':>7}{'own':>8}  {'model/loop':>10}{'model/own':>10}")
    for (model, tile, tool, precision), runs in sorted(rows.items()):
        pick = {what: median([r[what] for r in runs]) for what in ("loop", "model", "wait", "read", "own")}
        rest = pick["loop"] - pick["model"] - pick["wait"]
        print(f"{model:<11}{tile:>5}  {tool:<6}{precision:<5}{pick['loop']:>8.2f}{pick['model']:>8.2f}"
              f"{pick['wait']:>7.2f}{rest:>7.2f}{pick['read']:>7.2f}{fmt(pick['own'], 8, 2)}  "
              f"{pick['model'] / pick['loop']:>10.3f}{pick['model'] / pick['own']:>10.3f}")
    print("read* = the reader threads' own time, overlapped with the model's (not part of the loop's sum)")


def main() -> int:
    if len(sys.argv) != 3 or sys.argv[1] not in ("mgpr", "python", "summary", "profile"):
        print(__doc__, file=sys.stderr)
        return 2
    what, path = sys.argv[1], Path(sys.argv[2])
    if what == "summary":
        summary(path)
    elif what == "profile":
        profile(path)
    else:
        print(mgpr_run(path) if what == "mgpr" else python_run(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
