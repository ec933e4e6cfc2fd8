"""The benchmark drivers in bench/, run against stand-ins for mgpr and multigpu_raster's
Python (stub_programs.py). bench/gpu-check has its own tests (test_gpu_check.py)."""
import importlib.machinery
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
STUB = HERE / "stub_programs.py"


def load_driver(name):
    """A driver (an executable without .py) as a module, for its functions."""
    loader = importlib.machinery.SourceFileLoader(name.replace("-", "_"), str(REPO / "bench" / name))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def link_stub(folder: Path, *names):
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).symlink_to(STUB)


def calls(path: Path, program: str):
    return [line.split() for line in path.read_text().splitlines() if line.split()[0] == program]


class CpuScalingTest(unittest.TestCase):
    def test_three_shapes_rotate_and_the_medians_follow(self):
        with tempfile.TemporaryDirectory() as folder:
            folder = Path(folder)
            link_stub(folder / "bin", "mgpr", "mgpr-test-image")
            env = dict(os.environ, MGPR_BIN=str(folder / "bin"), OUT=str(folder / "out"), SIZE="2048",
                       ROUNDS="3", EXTRA="precision=fp32", STUB_CALLS=str(folder / "calls"))
            done = subprocess.run([REPO / "bench/run-cpu-scaling"], env=env, capture_output=True, text=True,
                                  timeout=60)
            self.assertEqual(done.returncode, 0, done.stderr)
            lines = done.stdout.splitlines()
            self.assertEqual(lines[0], f"# mgpr 0.9.0 (LibTorch 2.7.0, GDAL 3.6.2); {self.cpu()}")
            self.assertEqual(lines[1], "# MODEL=builtin:resnet50 TASK=classify TILE=512 SIZE=2048 BATCH=4 "
                                       "WORKERS=2 ROUNDS=3 precision=fp32")
            runs = [re.match(r"^(\S+) round (\d): 16 tiles in [0-9.]+ s, [0-9.]+ tiles/s$", line)
                    for line in lines[2:11]]
            self.assertTrue(all(runs), lines)
            self.assertEqual([run.group(1) for run in runs],
                             ["1x2", "2x1", "1x1", "2x1", "1x1", "1x2", "1x1", "1x2", "2x1"])
            ranks = [call for call in calls(folder / "calls", "mgpr") if call[1:] != ["--version"]]
            self.assertEqual([(c[c.index("gpus=1") if "gpus=1" in c else c.index("gpus=2")], c[-2], c[-1])
                              for c in ranks[:3]],
                             [("gpus=1", "threads=2", "precision=fp32"), ("gpus=2", "threads=1", "precision=fp32"),
                              ("gpus=1", "threads=1", "precision=fp32")])
            self.assertRegex(lines[11], r"^medians, tiles/s over the process wall: 1 rank x 1 thread [0-9.]+; "
                                        r"1 rank x 2 threads [0-9.]+; 2 ranks x 1 thread [0-9.]+$")
            self.assertRegex(lines[12], r"^2 ranks / 1 rank \(1 thread each\): [0-9.]+x, efficiency [0-9]+%; "
                                        r"2 threads / 1 thread: [0-9.]+x; 2 ranks x 1 / 1 rank x 2: [0-9.]+x$")
            self.assertEqual(len(lines), 13)

    @staticmethod
    def cpu():
        sys.path.insert(0, str(REPO / "bench"))
        import benchlib
        return benchlib.describe_cpu()

    def test_a_failed_run_stops_with_its_log(self):
        with tempfile.TemporaryDirectory() as folder:
            folder = Path(folder)
            link_stub(folder / "bin", "mgpr", "mgpr-test-image")
            env = dict(os.environ, MGPR_BIN=str(folder / "bin"), OUT=str(folder / "out"), SIZE="1024",
                       STUB_FAIL="gpus=2")
            done = subprocess.run([REPO / "bench/run-cpu-scaling"], env=env, capture_output=True, text=True,
                                  timeout=60)
            self.assertEqual(done.returncode, 1)
            self.assertIn("run-cpu-scaling: 2x1 failed:\nmgpr: error: gpus=2 refused by the stub", done.stderr)


class VsMultigpuRasterTest(unittest.TestCase):
    """The matrix against stand-ins: the order of runs, results.tsv and summary.txt."""

    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        root = Path(self.folder.name)
        self.root = root
        link_stub(root / "build/bin", "mgpr", "mgpr-test-image")
        link_stub(root / "build2/bin", "mgpr")
        for build in ("build", "build2"):  # torchvision's operators built for each
            (root / build / "lib").mkdir()
            (root / build / "lib/libmgpr_torchvision_ops.so").write_text("")
        link_stub(root / "vs/venv/bin", "python")
        link_stub(root / "debian", "debian-python")
        requirements = (REPO / "bench/multigpu-raster/requirements.txt").read_bytes()
        import hashlib
        (root / "vs/venv/.mgpr-stamp").write_text(hashlib.sha256(requirements).hexdigest() + "\n")
        self.env = dict(os.environ, MGPR_BIN=str(root / "build/bin"), MGPR_VS_DIR=str(root / "vs"),
                        DEBIAN_PYTHON=str(root / "debian/debian-python"), SIZE="1024", TILES="512",
                        PRECISIONS="fp32", PAIRS="2", WARMUP="1", STUB_CALLS=str(root / "calls"))

    def tearDown(self):
        self.folder.cleanup()

    def run_matrix(self, **settings):
        return subprocess.run([REPO / "bench/run-vs-multigpu-raster"], env=dict(self.env, **settings),
                              capture_output=True, text=True, timeout=120)

    def results(self):
        (run,) = (self.root / "vs/runs").iterdir()
        return run, (run / "results.tsv").read_text().splitlines()

    def test_pairs_alternate_and_the_summary_gives_the_ratios(self):
        done = self.run_matrix(MODELS="resnet50 fasterrcnn")
        self.assertEqual(done.returncode, 0, done.stderr + done.stdout)
        run, results = self.results()
        self.assertRegex(results[0], r"^# \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d \S* on \S+: .+, \d+ CPUs$")
        self.assertEqual(results[1], "# mgpr 0.9.0 (LibTorch 2.7.0, GDAL 3.6.2); multigpu_raster venv: stub 1.0")
        self.assertEqual(results[2], "# SIZE=1024 BATCH=16 THREADS=2 WORKERS=2 PAIRS=2 PRECISIONS='fp32'")
        self.assertEqual(results[3],
                         "# model tile tool precision pair wall_s tiles own_s loop_s steady_tiles_per_s peak_rss_mib")
        self.assertEqual(results[4], "# default mgpr=bf16")
        rows = [line.split() for line in results[5:]]
        self.assertEqual([row[:5] for row in rows], [
            ["resnet50", "512", "mgpr", "fp32", "1"], ["resnet50", "512", "multigpu_raster", "32-true", "1"],
            ["resnet50", "512", "multigpu_raster", "32-true", "2"], ["resnet50", "512", "mgpr", "fp32", "2"],
            ["fasterrcnn", "512", "mgpr", "fp32", "1"], ["fasterrcnn", "512", "multigpu_raster", "32-true", "1"],
            ["fasterrcnn", "512", "multigpu_raster", "32-true", "2"], ["fasterrcnn", "512", "mgpr", "fp32", "2"]])
        for row in rows:
            self.assertEqual(len(row), 11, row)
            self.assertEqual(row[6], "4", "tiles")
            self.assertGreater(float(row[5]), 0.05, "the wall time of the run, launch to exit")
            self.assertGreater(int(row[10]), 0, "the run's peak RSS in MiB")
        mgpr_runs = [call for call in calls(self.root / "calls", "mgpr") if "--version" not in call]
        detector = [call for call in mgpr_runs if "task=detect" in call]
        self.assertTrue(detector and all(f"model_libraries={(self.root / 'build/lib/libmgpr_torchvision_ops.so')}"
                                         in call for call in detector))
        summary = (run / "summary.txt").read_text().splitlines()
        self.assertEqual(summary[:5], results[:5])
        self.assertTrue(summary[5].startswith("tiles/s, median of the pairs; mgr = multigpu_raster"))
        table = [line.split() for line in summary if line.startswith(("resnet50", "fasterrcnn"))]
        self.assertEqual([row[:5] for row in table], [["resnet50", "512", "mgpr", "fp32", "(fp32"],
                                                      ["fasterrcnn", "512", "mgpr", "fp32", "(fp32"]])
        for row in table:
            # label (5 words), tiles, then ours/mgr/ratio for the wall, own span, steady rate and peak RSS
            self.assertEqual(len(row), 8 + 4 * 3, row)
            self.assertGreater(float(row[-3]), 0, "mgpr's peak RSS, MiB")
            self.assertGreater(float(row[-2]), 0, "multigpu_raster's peak RSS, MiB")
        self.assertIn(f"runs, results.tsv and summary.txt: {run}", done.stdout)
        warmups = sorted(path.name for path in run.glob("warmup-*"))
        self.assertEqual(warmups, ["warmup-mgpr-1", "warmup-multigpu_raster-1"])

    def test_a_second_build_joins_every_pair_and_failures_are_recorded(self):
        done = self.run_matrix(MODELS="resnet50", MGPR2_BIN=str(self.root / "build2/bin"), WARMUP="0")
        run, results = self.results()
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(results[2], "# mgpr2: mgpr 0.9.0 (LibTorch 2.7.0, GDAL 3.6.2)")
        tools = [line.split()[2] for line in results if not line.startswith("#")]
        self.assertEqual(tools, ["mgpr", "mgpr2", "multigpu_raster", "multigpu_raster", "mgpr2", "mgpr"])

        (self.root / "vs/runs" / run.name).rename(self.root / "first-run")
        done = self.run_matrix(MODELS="retinanet", WARMUP="0", PAIRS="1", STUB_FAIL="retinanet.pt")
        self.assertEqual(done.returncode, 1)
        self.assertIn("run-vs-multigpu-raster: 1 run(s) failed", done.stderr)
        run, results = self.results()
        self.assertIn("# FAILED retinanet 512 mgpr fp32 1: mgpr: error: retinanet.pt refused by the stub", results)
        self.assertIn("# default mgpr=unknown", results)
        self.assertIn("# FAILED retinanet 512 mgpr fp32 1: mgpr: error: retinanet.pt refused by the stub",
                      (run / "summary.txt").read_text().splitlines())

    def test_without_the_venv_it_says_what_to_run(self):
        (self.root / "vs/venv/.mgpr-stamp").write_text("another\n")
        done = self.run_matrix()
        self.assertEqual(done.returncode, 2)
        self.assertIn("run bench/multigpu-raster/setup-venv first", done.stderr)


class HelpTest(unittest.TestCase):
    def test_every_driver_explains_itself(self):
        for driver in ("run-vs-multigpu-raster", "run-cpu-benchmarks", "run-cpu-scaling"):
            done = subprocess.run([REPO / "bench" / driver, "--help"], capture_output=True, text=True, timeout=30)
            self.assertEqual(done.returncode, 0, driver)
            self.assertIn(f"usage: bench/{driver}", done.stdout)
            self.assertIn("settings (environment):", done.stdout)


if __name__ == "__main__":
    unittest.main()
