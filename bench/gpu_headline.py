"""The steps of bench/gpu-check's first call, which alone make the headline table: what a
user gets by default against tuned settings, mgpr's boxes in each precision against fp32
and torchvision eager on the same card, and mgpr against Lightning fed the same tiles.

Busy, everywhere here, is nvidia-smi's utilization.gpu averaged over the window the
program names as its loop: the share of time in which a kernel ran, so two streams busy
at once count once (mgpr-bench-pipeline's forward passes' share of the wall sums the
passes in flight, past 100 % with two: it is shown beside, never as busy).
"""
import math
import re
import shutil
import time
from pathlib import Path

from gpu_carry import OPERATORS, carry_programs, carry_size_mib
from gpu_figures import bench_figures, busy_over, match_boxes, near_threshold, read_boxes

BENCH = Path(__file__).resolve().parent
# (name, model file stem, tile side, score threshold). The thresholds keep the boxes
# compared clear of each network's cap on its boxes (bench/gpu_models.py), where a
# rounding difference could swap the last ones.
DETECTORS = (("RetinaNet", "retinanet", 800, 0.81), ("Faster R-CNN", "fasterrcnn", 800, 0.95),
             ("DeepForest", "deepforest", 400, 0.1))
BOX_TILES = 128  # the tiles whose boxes are compared (the goal asks for 64 or more)
# Boxes scoring within this of the score threshold are the ones a rounding difference
# moves across it: each comparison is also made without them.
SURE_MARGIN = 0.01
# What a user gets (common/include/mgpr/config.hpp: batch 4, 2 readers, precision=auto,
# threads from the allocation), then one change at a time, then both.
SETTINGS = (("defaults", []), ("tuned: bf16, batch 16, 8 readers", ["precision=bf16", "batch_size=16", "workers=8"]),
            ("defaults + bf16", ["precision=bf16"]), ("defaults + batch 16, 8 readers", ["batch_size=16", "workers=8"]))
LOOP_LINE = r"rank 0: done, \d+ tiles in \d+ batches, ([0-9.]+) s"
ROUND_LINE = r"end-to-end \d+ tiles in ([0-9.]+) s"
STEADY_LINE = r"lightning steady: \d+ tiles in ([0-9.]+) s"


def matched_share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f} % ({part} of {whole})" if whole else "no boxes"


def percent(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.0f} %"


class HeadlineSteps:
    """Mixed into bench/gpu-check's Check (bench/gpu_runner.py's Runner)."""

    def versions(self, limit):
        status, output, _ = self.run("versions", "nvidia-smi", ["nvidia-smi", "--query-gpu=name,uuid,driver_version,"
                                     "memory.total", "--format=csv,noheader"], limit / 4)
        self.record(f"card: {output.strip()}")
        script = ("import torch, torchvision, os, platform;"
                  "print('torch', torch.__version__, 'cuda', torch.version.cuda,"
                  " 'cudnn', torch.backends.cudnn.version(), 'torchvision', torchvision.__version__);"
                  "print('libs', os.path.join(os.path.dirname(torch.__file__), 'lib'));"
                  "print('cpu', platform.processor() or platform.machine(), os.cpu_count())")
        status, output, _ = self.run("versions", "python versions", [self.python, "-c", script], limit / 2)
        self.record(output.strip())
        cpu = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
        model = re.search(r"^model name\s*:\s*(.*)$", cpu, re.M)
        flags = re.search(r"^flags\s*:\s*(.*)$", cpu, re.M)
        wanted = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")
        self.record(f"host CPU: {model.group(1) if model else 'unknown'}; "
                    f"{' '.join(flag for flag in wanted if flags and flag in flags.group(1).split())}")
        match = re.search(r"^libs (.*)$", output, re.M)
        torch_lib = Path(match.group(1)) if match else None
        # torch/lib and the NVIDIA wheels' folders beside torch (nvidia/cu13/lib, nvidia/*/lib).
        folders = []
        if torch_lib and not self.rehearsal:
            folders.append(str(torch_lib))
            nvidia = torch_lib.parent.parent / "nvidia"
            folders += sorted({str(path.parent) for path in nvidia.rglob("lib*.so*")}) if nvidia.is_dir() else []
        # A rehearsal's programs find their own LibTorch (the build's run paths).
        given = [path for path in [self.env.get("LD_LIBRARY_PATH")] if path]
        self.env["LD_LIBRARY_PATH"] = ":".join(folders + given)
        built = (self.carry / "BUILT").read_text().split() if (self.carry / "BUILT").is_file() else []
        self.record(f"carry: {' '.join(built)}, {carry_size_mib(self.carry):.1f} MiB")
        status, output, _ = self.run("versions", "lightning version", [self.python, "-c", "import importlib.metadata "
                                     "as m; print('lightning', m.version('lightning'))"], limit / 4, expect=(0, 1))
        self.record(output.strip().splitlines()[-1] if output.strip() else "lightning: no version")
        env = self.carry_env("versions")
        if env is None:
            return
        for name in carry_programs(self.carry):
            status, output, _ = self.run("versions", f"ldd {name}", ["ldd", self.bin(name)], 5, env=env)
            missing = [line.strip() for line in output.splitlines() if "not found" in line]
            self.record(f"load {name}: {'ok' if status == 0 and not missing else 'FAILED ' + '; '.join(missing)}")
        status, output, _ = self.run("versions", "mgpr --version", [self.bin("mgpr"), "--version"], 10, env=env)
        self.record(f"mgpr --version: exit {status}: {output.strip().splitlines()[0] if output.strip() else ''}")

    def models(self, limit):
        names = ["resnet50", *(stem for _, stem, _, _ in DETECTORS)]
        status, output, seconds = self.run(
            "models", "export", [self.python, str(BENCH / "gpu_models.py"), str(self.work), *names], limit)
        self.record(f"models: exit {status} in {seconds:.1f} s: {' '.join(output.split()[-12:])}")

    def defaults(self, limit):
        model = self.work / "resnet50.pt"
        tiles = self.count(3072)
        self.table.append("| `mgpr`, ResNet-50 1024², raw 8-bit tiles | loop tiles/s | busy | exit |")
        self.table.append("| --- | --- | --- | --- |")
        for index, (label, settings) in enumerate(SETTINGS):
            out = self.work / f"defaults-{index}"
            shutil.rmtree(out, ignore_errors=True)
            # No accelerator key on the card either: auto finds the GPU, as a user's run does.
            where = ["accelerator=cpu"] if self.rehearsal else []
            command = [self.bin("mgpr"), f"model={model}", *where, "use_fake_data=true", f"dummy_dataset_count={tiles}",
                       "dummy_dataset_type=uint8", f"output_dir={out}", *settings]
            status, output, seconds, samples = self.sampled("defaults", label, command,
                                                            self.run_limit(len(SETTINGS) - index, 12))
            loop = re.search(r"rank 0: done, (\d+) tiles in \d+ batches, ([0-9.]+) s", output)
            busy, count = busy_over(samples, self.window_before(LOOP_LINE))
            rate = int(loop.group(1)) / float(loop.group(2)) if loop else math.nan
            # The banner says what the run resolved: its threads and the model's precision.
            threads = re.search(r"\| threads (\d+) \|", output)
            model_line = re.search(r"tiles of \d+ px, model (.*)", output)
            self.record(f"{label}: exit {status}, {rate:.1f} tiles/s over the loop, busy {percent(busy)} ({count} "
                        f"samples), {seconds:.1f} s in all; threads {threads.group(1) if threads else '?'}; model "
                        f"{model_line.group(1).strip() if model_line else '?'}")
            self.table.append(f"| {label} (`{' '.join(settings) or 'no settings'}`) | {rate:.1f} | {percent(busy)} | "
                              f"{status} |")

    def bench_sampled(self, step, label, model, limit, *settings, boxes=None):
        """One mgpr-bench-pipeline round with the card sampled: its figures and busy over
        its end-to-end pass."""
        command = [self.bin("mgpr-bench-pipeline"), f"model={model}", f"accelerator={self.accelerator}",
                   "use_fake_data=true", *settings, "--rounds=1"]
        if boxes:
            command.append(f"--boxes={boxes}")
        status, output, seconds, samples = self.sampled(step, label, command, limit)
        figures = bench_figures(output) if status == 0 else {}
        figures["busy_sampled"], figures["samples"] = busy_over(samples, self.window_before(ROUND_LINE))
        if "ratio" in figures:
            self.record(f"{label}: model-only {figures['model_only']:.1f} tiles/s, end-to-end "
                        f"{figures['end_to_end']:.1f} tiles/s, e2e/model-only {figures['ratio']:.3f}, busy "
                        f"{percent(figures['busy_sampled'])} ({figures['samples']} samples; the passes' time "
                        f"{figures.get('passes', math.nan):.0f} % of the wall) ({seconds:.0f} s)")
        return status, figures

    def boxes(self, limit):
        tiles = range(self.count(BOX_TILES))
        eager_dir = self.work / "eager"
        specs = [f"{stem}:{side}:{threshold}" for _, stem, side, threshold in DETECTORS]
        device = "cpu" if self.rehearsal else "cuda"
        self.run("boxes", "torchvision eager fp32", [self.python, str(BENCH / "gpu_eager.py"), eager_dir, *specs,
                                                     "--tiles", str(len(tiles)), "--device", device], limit * 0.3)
        self.table += ["", "| detector | precision | model-only tiles/s | end to end | busy | boxes as mgpr fp32's "
                       "| boxes as torchvision eager fp32's |", "| --- | --- | --- | --- | --- | --- | --- |"]
        # A CPU refuses fp16 (emulated, many times slower), and runs a detector's batch in
        # seconds: a rehearsal tries the commands on the first detector in the others.
        precisions = ("fp32", "auto", "bf16") if self.rehearsal else ("fp32", "auto", "bf16", "fp16")
        runs = [(detector, precision) for detector in DETECTORS[:1 if self.rehearsal else None]
                for precision in precisions]
        for index, ((name, stem, side, threshold), precision) in enumerate(runs):
            share = self.run_limit(len(runs) - index, 6)
            # The bench parses the boxes itself (--boxes) whatever the task; task=detect
            # would want rasters to place them in. torchvision's operators from the carry.
            settings = [f"tile_size={side}", f"batch_size={self.batch(8)}", "workers=8", "threads=4", "task=classify",
                        f"score_threshold={threshold}", f"model_libraries={self.carry / OPERATORS}",
                        f"precision={precision}", f"dummy_dataset_count={len(tiles)}"]
            found = self.work / f"{stem}.{precision}.csv"
            found.unlink(missing_ok=True)
            status, figures = self.bench_sampled("boxes", f"{name} {side}² {precision}", self.work / f"{stem}.pt",
                                                 share, *settings, boxes=found)
            against = []
            for reference in (self.work / f"{stem}.fp32.csv", eager_dir / f"{stem}.eager.csv"):
                if reference == found:
                    against.append("(the reference)")
                    continue
                if status != 0 or not found.is_file() or not reference.is_file():
                    against.append("not compared")
                    continue
                expected, offered = read_boxes(reference), read_boxes(found)
                matched, total = match_boxes(expected, offered, tiles)
                # The boxes a rounding difference cannot move across the threshold.
                sure, sure_total = match_boxes(expected, offered, tiles, sure_from=threshold + SURE_MARGIN)
                close = near_threshold(expected, tiles, threshold, SURE_MARGIN)
                against.append(f"{matched_share(matched, total)}; {matched_share(sure, sure_total)} of those ≥ "
                               f"{threshold + SURE_MARGIN:g}")
                self.record(f"{name} {precision} against {reference.name}: {matched} of {total} boxes on "
                            f"{len(tiles)} tiles at IoU >= 0.9, same label; {sure} of {sure_total} scoring "
                            f"{threshold + SURE_MARGIN:g} or more; {close} reference boxes within {SURE_MARGIN} "
                            f"of the threshold {threshold}")
            self.table.append(f"| {name} {side}² | {precision} | {figures.get('model_only', math.nan):.1f} | "
                              f"{figures.get('end_to_end', math.nan):.1f} | {percent(figures['busy_sampled'])} | "
                              f"{against[0]} | {against[1]} |")

    def lightning(self, limit):
        model = self.work / "resnet50.pt"
        self.table += ["", "| ResNet-50 1024² bf16, batch 16, 8 readers | mgpr end to end | busy | Lightning steady "
                       "| busy | mgpr / Lightning |", "| --- | --- | --- | --- | --- | --- |"]
        inputs = (("float32", "float32", "float"), ("8-bit", "uint8", "uint8"))
        for index, (words, mgpr_type, lightning_type) in enumerate(inputs):
            share = self.run_limit(len(inputs) - index, 30)
            started = time.monotonic()
            _, mgpr = self.bench_sampled(
                "lightning", f"mgpr bf16, {words} tiles", model, share * 0.3, "precision=bf16", "tile_size=1024",
                f"batch_size={self.batch(16)}", "workers=8", "threads=4", f"dummy_dataset_type={mgpr_type}",
                f"dummy_dataset_count={self.count(2048)}")
            command = [self.python, str(BENCH / "lightning_predict.py"), "--model", "resnet50", "--precision",
                       "bf16-mixed", "--tile", "1024", "--batch", str(self.batch(16)), "--count", str(self.count(1024)),
                       "--workers", "8", "--input", lightning_type, "--device", "cpu" if self.rehearsal else "cuda"]
            status, output, _, samples = self.sampled("lightning", f"Lightning bf16-mixed, {words} tiles", command,
                                                      share - (time.monotonic() - started))
            for line in output.splitlines():
                if line.startswith("lightning "):
                    self.record(line)
            steady = re.search(r"lightning steady: \d+ tiles in [0-9.]+ s = ([0-9.]+) tiles/s", output)
            rate = float(steady.group(1)) if steady else math.nan
            busy, count = busy_over(samples, self.window_before(STEADY_LINE))
            mgpr_rate = mgpr.get("end_to_end", math.nan)
            self.record(f"{words} tiles to both: mgpr {mgpr_rate:.1f} tiles/s end to end, Lightning {rate:.1f} "
                        f"steady (busy {percent(busy)}, {count} samples): {mgpr_rate / rate:.2f}x")
            self.table.append(f"| {words} tiles to both | {mgpr_rate:.1f} tiles/s | {percent(mgpr['busy_sampled'])} "
                              f"| {rate:.1f} tiles/s | {percent(busy)} | **{mgpr_rate / rate:.2f}×** |")
