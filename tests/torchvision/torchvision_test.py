#!/usr/bin/env python3
"""torchvision's own detectors and a segmenter, exported from Python, run by mgpr.

Each model is built with no pretrained weights (nothing is downloaded), a fixed seed and
a low score threshold so that random weights still give boxes. Known answers:
- one tile: mgpr's boxes are Python's, one to one, within 0.01 px and 1e-4 in score, and
  the map coordinates mgpr writes turn back into the same pixels;
- several overlapping tiles, 1 and 2 ranks: mgpr's boxes are the documented merge
  (tests/torchvision/reference.py) of Python's per-tile boxes; classes equal per pixel;
- the model cards scripts/mgpr_export.py writes (model_card_test.py, run here too).

Exit 77 (ctest: skipped) with the reason when this Python has no torchvision, or one of
another LibTorch generation than the one mgpr was built with.

  torchvision_test.py --bin build/bin --libtorch 2.7.0 [--operators LIBRARY] [unittest options]
"""
import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent.parent
sys.path.insert(0, str(HERE))
from test_models import SKIPPED, TIE, export, operators_library, skip_reason  # noqa: E402

ARGS = None  # set in __main__

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True, help="folder of mgpr and mgpr-test-image")
    parser.add_argument("--libtorch", required=True, help="the LibTorch version mgpr is built with")
    parser.add_argument("--operators", default="", help="torchvision's operators built for that LibTorch")
    ARGS, rest = parser.parse_known_args()
    reason = skip_reason(ARGS.libtorch, ARGS.operators)
    if reason:
        print(f"SKIPPED: {reason}")
        sys.exit(SKIPPED)

import reference  # noqa: E402  (imports torch and GDAL: only once they are known to be there)
from model_card_test import ModelCards  # noqa: E402,F401  (model cards: run here, under the same ctest)


def run(*args: str, expect: int = 0) -> subprocess.CompletedProcess:
    done = subprocess.run([str(Path(ARGS.bin) / args[0]), *args[1:]], capture_output=True, text=True, timeout=900)
    if done.returncode != expect:
        raise AssertionError(f"{' '.join(args)} exited {done.returncode}, expected {expect}:\n{done.stderr[-3000:]}")
    return done


def read_boxes(csv_path: Path):
    with open(csv_path, newline="") as file:
        return list(csv.DictReader(file))


class TorchvisionModels(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.temp = tempfile.TemporaryDirectory(prefix="mgpr-torchvision-")
        cls.folder = Path(cls.temp.name)
        # Squares give the detectors' random features something to fire on.
        run("mgpr-test-image", str(cls.folder / "one.tif"), "--size", "256", "--square", "40,60,50",
            "--square", "180,200,60")
        run("mgpr-test-image", str(cls.folder / "wide.tif"), "--width", "448", "--height", "320",
            "--square", "170,150,60", "--square", "300,40,40")

    @classmethod
    def tearDownClass(cls):
        cls.temp.cleanup()

    def mgpr(self, image: str, model: str, out: str, *keys: str, precision: str = "fp32") -> Path:
        # fp32 unless asked: Python's answers are fp32, and precision=auto may pick bf16 here.
        done = run("mgpr", str(self.folder / image), f"model={self.folder / model}", f"output_dir={self.folder / out}",
                   "accelerator=cpu", f"precision={precision}",
                   f"model_libraries={operators_library(ARGS.operators)}", *keys)
        self.last_stdout = done.stdout
        return self.folder / out

    def assert_same_boxes(self, expected, written, geotransform):
        self.assertGreater(len(expected), 0, "the reference found no box: the test would prove nothing")
        self.assertEqual(len(written), len(expected), "mgpr and Python keep different numbers of boxes")
        unmatched = list(written)
        gt = geotransform
        for box in expected:
            def fits(row):
                return (int(row["label"]) == box.label and abs(float(row["score"]) - box.score) <= 1e-4
                        and all(abs(float(row[k]) - getattr(box, k)) <= 0.01 for k in ("x1", "y1", "x2", "y2")))
            match = next((row for row in unmatched if fits(row)), None)
            self.assertIsNotNone(match, f"Python's box {box} is not among mgpr's")
            unmatched.remove(match)
            # Map corners back to pixels through the (unrotated) geotransform.
            self.assertAlmostEqual((float(match["map_x1"]) - gt[0]) / gt[1], box.x1, delta=0.01)
            self.assertAlmostEqual((float(match["map_y1"]) - gt[3]) / gt[5], box.y1, delta=0.01)
            self.assertAlmostEqual((float(match["map_x2"]) - gt[0]) / gt[1], box.x2, delta=0.01)
            self.assertAlmostEqual((float(match["map_y2"]) - gt[3]) / gt[5], box.y2, delta=0.01)

    def check_detector_on_one_tile(self, arch: str):
        network = export(arch, self.folder, 256)
        out = self.mgpr("one.tif", f"{arch}.pt", f"{arch}-one", "task=detect", "tile_size=256", "batch_size=1")
        _, gt = reference.read_image(str(self.folder / "one.tif"))
        placed = reference.placed_boxes(network, str(self.folder / "one.tif"), 256, 0)
        expected = reference.merge(placed)
        # One tile: the merge can only drop what the model's own NMS already dropped.
        self.assertEqual(len(expected), len(placed))
        self.assert_same_boxes(expected, read_boxes(out / "one_detections.csv"), gt)

    def test_faster_rcnn_on_one_tile_gives_pythons_boxes(self):
        self.check_detector_on_one_tile("fasterrcnn")

    def test_retinanet_on_one_tile_gives_pythons_boxes(self):
        self.check_detector_on_one_tile("retinanet")

    def test_detectors_run_in_bf16_by_default_where_the_cpu_has_it_near_pythons_fp32_boxes(self):
        # mgpr's operators carry CPU autocast rules for nms and roi_align (torchvision 0.14's
        # have CUDA's only): without them precision=auto fell back to fp32 for detectors.
        if not ARGS.operators or int(ARGS.libtorch.split(".")[0]) < 2:
            self.skipTest("precision=auto runs fp32 with LibTorch 1.x or without mgpr's operators library")
        if not re.search(r"\b(avx512_bf16|amx_bf16)\b", Path("/proc/cpuinfo").read_text()):
            self.skipTest("this CPU has no native bf16 (avx512_bf16/amx_bf16): precision=auto runs fp32")
        for arch in ("fasterrcnn", "retinanet"):
            with self.subTest(arch=arch):
                network = export(arch, self.folder, 256)
                out = self.mgpr("one.tif", f"{arch}.pt", f"{arch}-auto", "task=detect", "tile_size=256",
                                "batch_size=1", precision="auto")
                self.assertIn("in bf16 (auto: native", self.last_stdout)
                expected = reference.placed_boxes(network, str(self.folder / "one.tif"), 256, 0)
                written = [reference.Box(*(float(row[k]) for k in ("x1", "y1", "x2", "y2", "score")),
                                         int(row["label"]), (0, 0)) for row in read_boxes(out / "one_detections.csv")]
                # bf16 reorders the random network's many near-equal low scores, so the check is
                # on Python's 20 best boxes: each found again, same class, overlapping (measured:
                # 20 of 20 for both; at IoU 0.9, 9 and 18).
                best = sorted(expected, key=lambda box: -box.score)[:20]
                self.assertEqual(len(best), 20, "the random network found too little to compare")
                found = sum(1 for box in best if any(
                    other.label == box.label and reference.iou(box, other) >= 0.5 for other in written))
                self.assertGreaterEqual(found, 18, f"{found} of Python's 20 best boxes found again in bf16")

    def test_retinanet_on_overlapping_tiles_gives_the_documented_merge_on_one_and_two_ranks(self):
        network = export("retinanet", self.folder, 192)
        image = str(self.folder / "wide.tif")
        _, gt = reference.read_image(image)
        placed = reference.placed_boxes(network, image, 192, 64)
        expected = reference.merge(placed)
        # The case must exercise both halves of the rule: IoU and containment across tiles.
        without_containment = reference.merge(placed, containment=float("inf"))
        self.assertLess(len(without_containment), len(placed), "no box dropped by IoU")
        self.assertLess(len(expected), len(without_containment), "no cut copy dropped by containment")
        self.assertTrue(any(box.truncated for box in expected), "no cut box kept")
        for ranks in (1, 2):
            with self.subTest(ranks=ranks):
                out = self.mgpr("wide.tif", "retinanet.pt", f"retina-wide-{ranks}", "task=detect", "tile_size=192",
                                "overlap=64", "batch_size=2", f"gpus={ranks}", "threads=1")
                self.assert_same_boxes(expected, read_boxes(out / "wide_detections.csv"), gt)

    def test_tiles_at_an_existing_exports_cap_are_counted_and_named(self):
        # A RetinaNet exported without a card, its detections_per_img lowered to 1: every tile
        # that found a box reached it. mgpr reads the cap from the scripted network itself.
        folder = self.folder / "capped"
        folder.mkdir(exist_ok=True)
        export("retinanet", folder, 192, detections_per_img=1)
        logs = self.folder / "capped-logs"
        done = subprocess.run([str(Path(ARGS.bin) / "mgpr"), str(self.folder / "wide.tif"),
                               f"model={folder / 'retinanet.pt'}", f"output_dir={self.folder / 'capped-out'}",
                               "accelerator=cpu", "precision=fp32", "task=detect", "tile_size=192", "overlap=64",
                               f"model_libraries={operators_library(ARGS.operators)}"],
                              capture_output=True, text=True, timeout=900,
                              env={**os.environ, "MGPR_LOG_DIR": str(logs)})
        self.assertEqual(done.returncode, 0, done.stderr[-3000:])
        rows = read_boxes(self.folder / "capped-out" / "wide_detections.csv")
        self.assertGreater(len(rows), 0, "the random RetinaNet found nothing: the test would prove nothing")
        summary = json.loads((logs / "rank-00000.json").read_text())
        self.assertEqual(summary["box_cap"], 1)
        self.assertGreaterEqual(summary["tiles_at_box_cap"], 1)
        warning = next(text for text in summary["warnings"] if "cap of 1 boxes" in text)
        self.assertRegex(warning, r"wide\.tif tile at x \d+, y \d+")
        self.assertRegex(done.stdout, r"tiles? hit the model's cap of 1 boxes")

    def test_deeplabv3_on_overlapping_tiles_gives_pythons_classes_per_pixel(self):
        import numpy as np
        from osgeo import gdal
        network = export("deeplabv3", self.folder, 192)
        image = str(self.folder / "wide.tif")
        expected, margins = reference.segment_image(network, image, 192, 64)
        self.assertGreater(len(np.unique(expected)), 1, "one class everywhere would prove little")
        for ranks in (1, 2):
            with self.subTest(ranks=ranks):
                out = self.mgpr("wide.tif", "deeplabv3.pt", f"deeplab-{ranks}", "task=segment", "tile_size=192",
                                "overlap=64", f"gpus={ranks}", "threads=1")
                mosaic = gdal.Open(str(out / "wide_segmentation.vrt"))  # the band lives only as long as it
                written = mosaic.GetRasterBand(1).ReadAsArray()
                # Where the two best scores are within float noise, either class is right.
                decided = margins > TIE
                differing = int((written != expected)[decided].sum())
                self.assertEqual(differing, 0, f"{differing} of {int(decided.sum())} pixels differ from Python")
                self.assertGreater(decided.mean(), 0.99)

    def test_a_detector_without_its_operators_library_is_refused_with_a_hint(self):
        export("fasterrcnn", self.folder, 256)
        done = run("mgpr", str(self.folder / "one.tif"), f"model={self.folder / 'fasterrcnn.pt'}", "task=detect",
                   f"output_dir={self.folder / 'no-ops'}", "accelerator=cpu", expect=2)
        self.assertIn("torchvision::", done.stderr)
        self.assertIn("model_libraries=", done.stderr)
        self.assertLess(done.stderr.count("\n"), 4, f"a short message, not a script traceback:\n{done.stderr}")
        self.assertFalse((self.folder / "no-ops" / "one_detections.csv").exists())

    def test_the_wrapper_in_the_deepforest_guide_is_the_one_exported_here(self):
        guide = (SOURCE / "docs" / "deepforest.md").read_text()
        wrappers = (SOURCE / "scripts" / "mgpr_wrappers.py").read_text()
        shown = re.search(r"```python\n(class DetectorForMgpr.*?)\n```", guide, re.S)
        self.assertIsNotNone(shown, "docs/deepforest.md shows no DetectorForMgpr")
        self.assertIn(shown.group(1), wrappers, "docs/deepforest.md's wrapper differs from scripts/mgpr_wrappers.py")


if __name__ == "__main__":
    ModelCards.bin, ModelCards.operators = Path(ARGS.bin), operators_library(ARGS.operators)
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)
