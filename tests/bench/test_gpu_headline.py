"""bench/gpu-check's first call against stand-ins for its programs (gpu_stub_programs.py):
the steps that make the headline table read the lines the programs print, busy comes
from the utilisation samples inside the window a program names, and the boxes of each
precision are compared with fp32's and torchvision eager's."""
import importlib.machinery
import importlib.util
import os
import tempfile
import time
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STUB = Path(__file__).resolve().parent / "gpu_stub_programs.py"


def load_check():
    loader = importlib.machinery.SourceFileLoader("gpu_check_headline", str(REPO / "bench" / "gpu-check"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


check = load_check()


class HeadlineTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        root = Path(self.folder.name)
        (root / "carry" / "bin").mkdir(parents=True)
        (root / "stubs").mkdir()
        for name in ("mgpr", "mgpr-bench-pipeline"):
            (root / "carry" / "bin" / name).symlink_to(STUB)
        for name in ("python", "nvidia-smi"):
            (root / "stubs" / name).symlink_to(STUB)
        self.saved = {name: os.environ.get(name) for name in ("PATH", "TMPDIR")}
        os.environ["PATH"] = f"{root / 'stubs'}{os.pathsep}{os.environ['PATH']}"
        os.environ["TMPDIR"] = str(root)
        self.check = check.Check(root / "out", root / "carry", budget_s=120)
        self.check.python = str(root / "stubs" / "python")

    def tearDown(self):
        self.check.results.close()
        for name, value in self.saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self.folder.cleanup()

    def step(self, name, limit):
        self.check.step_ends = time.monotonic() + limit
        getattr(self.check, name)(limit)

    def test_defaults_against_tuned_with_busy_over_the_loop(self):
        self.step("defaults", 30)
        rows = self.check.table[2:]
        self.assertEqual(len(rows), 4, self.check.table)
        # 3072 tiles in the stand-in's 0.30 s loop; its samples are all 90 %.
        self.assertIn("| defaults (`no settings`) | 10240.0 | 90 % | 0 |", rows[0])
        self.assertIn("precision=bf16 batch_size=16 workers=8", rows[1])
        results = (self.check.out / "results.txt").read_text()
        self.assertIn("threads 16", results)

    def test_boxes_against_fp32_and_eager_on_the_same_tiles(self):
        self.step("models", 10)
        self.step("boxes", 60)
        rows = [row for row in self.check.table if row.startswith("| RetinaNet")]
        self.assertEqual([row.split(" | ")[1] for row in rows], ["fp32", "auto", "bf16", "fp16"], self.check.table)
        every = "100.0 % (256 of 256); 100.0 % (256 of 256) of those ≥ 0.82"
        self.assertIn(f"| (the reference) | {every} |", rows[0])
        self.assertTrue(rows[3].endswith(f"| {every} | {every} |"), rows[3])
        self.assertIn("| 90 % |", rows[1])

    def test_lightning_at_equal_input(self):
        self.step("lightning", 30)
        rows = [row for row in self.check.table if "tiles to both" in row]
        self.assertEqual(len(rows), 2, self.check.table)
        # The stand-ins: mgpr 2048 tiles in 0.30 s, Lightning 1024 tiles at half its rate.
        self.assertTrue(rows[0].startswith("| float32 tiles to both | 6826.7 tiles/s | 90 % | 1706.7 tiles/s | 90 %"),
                        rows[0])
        self.assertTrue(rows[1].endswith("| **4.00×** |"), rows[1])


if __name__ == "__main__":
    unittest.main()
