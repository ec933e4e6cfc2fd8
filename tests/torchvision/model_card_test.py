#!/usr/bin/env python3
"""Model cards written by scripts/mgpr_export.py, read back by Python and by mgpr.

Known answers: the card the export script's options describe, byte for byte what
json.dumps gives, is the archive's `<archive>/extra/mgpr.json`; `mgpr --model-info` prints
its description and its settings as TOML `key = value` lines that parse back (tomllib) to
the same values; DeepForest's tree model exported with its card runs with no keys but the
model and its operators (task=detect, class names, tile size from the card) and
`mgpr --cfg job` names the card as the origin of those keys; a card with a key mgpr does
not know, or naming another number of classes than the model has, is refused.

Run by torchvision_test.py (ctest torchvision.models), which skips with the reason where
this Python has no torch and torchvision; alone:

  model_card_test.py --bin build/bin [--operators LIBRARY] [unittest options]
"""
import csv
import json
import re
import subprocess
import sys
import tempfile
import unittest
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent.parent
EXPORTER = SOURCE / "scripts" / "mgpr_export.py"
sys.path.insert(0, str(SOURCE / "scripts"))

try:
    import tomllib
except ImportError:  # Python < 3.11
    try:
        import tomli as tomllib
    except ImportError:
        tomllib = None

# The options of one export and the card they must give (model_card's key order:
# the format version, the description, then the settings in mgpr's order).
OPTIONS = ["--num-classes", "2", "--classes", "Tree", "Dead tree", "--gsd", "0.1", "--gsd-tolerance", "0.2",
           "--tile-size", "256", "--overlap", "32", "--bands", "3", "2", "1", "--scale", "0.00392156862745098",
           "--mean", "0.1", "--std", "0.5", "0.25", "0.125", "--nodata", "0", "--resampling", "average",
           "--score-threshold", "0.3", "--iou-threshold", "0.15", "--class-aware-nms", "false",
           "--name", "Tiny crowns", "--version", "0.1.0", "--licence", "CC-BY-4.0",
           "--source", "https://example.org/tiny-crowns", "--description", "random weights, for tests",
           "--detections-per-img", "500", "--topk-candidates", "2000"]
EXPECTED = {
    "mgpr_card": 1, "name": "Tiny crowns", "version": "0.1.0", "licence": "CC-BY-4.0",
    "source": "https://example.org/tiny-crowns", "description": "random weights, for tests",
    "detections_per_img": 500, "topk_candidates": 2000,
    "task": "detect", "class_names": ["Tree", "Dead tree"], "bands": [3, 2, 1], "scale": 1 / 255, "mean": [0.1],
    "std": [0.5, 0.25, 0.125], "nodata": "0", "tile_size": 256, "overlap": 32, "gsd": 0.1, "gsd_tolerance": 0.2,
    "resampling": "average", "score_threshold": 0.3, "iou_threshold": 0.15, "class_aware_nms": False,
}
DESCRIPTION = ("name", "version", "licence", "source")
LIMITS = ("detections_per_img", "topk_candidates")


def card_in(model: Path) -> dict:
    """The card inside a TorchScript archive, read with zipfile alone (no torch)."""
    with zipfile.ZipFile(model) as archive:
        names = [name for name in archive.namelist() if re.fullmatch(r"[^/]+/extra/mgpr\.json", name)]
        if len(names) != 1:
            raise AssertionError(f"{model} holds {len(names)} */extra/mgpr.json: {archive.namelist()[:8]}")
        return json.loads(archive.read(names[0]))


def settings_shown(stdout: str) -> dict:
    """The `key = value` lines of `mgpr --model-info`, parsed as the TOML they are."""
    lines = [line for line in stdout.splitlines() if re.match(r"^[a-z_]+ = ", line)]
    return tomllib.loads("\n".join(lines))


class ModelCards(unittest.TestCase):
    bin = SOURCE / "build" / "bin"  # torchvision_test.py sets these from its options
    operators = ""

    @classmethod
    def setUpClass(cls):
        cls.temp = tempfile.TemporaryDirectory(prefix="mgpr-model-card-")
        cls.folder = Path(cls.temp.name)

    @classmethod
    def tearDownClass(cls):
        cls.temp.cleanup()

    def mgpr(self, *args: str, expect: int = 0) -> subprocess.CompletedProcess:
        done = subprocess.run([str(Path(self.bin) / "mgpr"), *args], capture_output=True, text=True, timeout=600)
        if done.returncode != expect:
            raise AssertionError(f"mgpr {' '.join(args)} exited {done.returncode}, expected {expect}:\n"
                                 f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
        return done

    def export(self, arch: str, name: str, *options: str) -> Path:
        model = self.folder / name
        done = subprocess.run([sys.executable, str(EXPORTER), arch, str(model), "--random", "--seed", "7", *options],
                              capture_output=True, text=True, timeout=600)
        self.assertEqual(done.returncode, 0, f"mgpr_export.py failed:\n{done.stderr[-3000:]}")
        return model

    def model_info(self, model: Path, succeeds: bool = True) -> subprocess.CompletedProcess:
        """`mgpr --model-info MODEL`; skips, saying so, where this mgpr does not have it yet."""
        done = subprocess.run([str(Path(self.bin) / "mgpr"), "--model-info", str(model)], capture_output=True,
                              text=True, timeout=600)
        if done.returncode != 0 and "--model-info" in done.stderr and "not expected" in done.stderr:
            self.skipTest(f"{self.bin}/mgpr has no --model-info yet")
        if tomllib is None:
            self.skipTest(f"{sys.executable} has neither tomllib (Python 3.11) nor tomli")
        if succeeds:
            self.assertEqual(done.returncode, 0, f"mgpr --model-info {model} failed:\n{done.stderr[-3000:]}")
        else:
            self.assertNotEqual(done.returncode, 0, f"mgpr --model-info {model} accepted it:\n{done.stdout}")
        return done

    def test_the_export_script_writes_the_options_as_the_archives_mgpr_json(self):
        model = self.export("retinanet", "described.pt", *OPTIONS)
        card = card_in(model)
        self.assertEqual(card, EXPECTED)
        self.assertEqual(list(card), list(EXPECTED), "the keys in model_card's order")
        with zipfile.ZipFile(model) as archive:
            text = archive.read(next(n for n in archive.namelist() if n.endswith("/extra/mgpr.json"))).decode()
        self.assertEqual(text, json.dumps(EXPECTED, indent=2) + "\n")

    def test_mgpr_model_info_shows_the_cards_description_and_settings_as_cfg_job_would(self):
        model = self.export("retinanet", "shown.pt", *OPTIONS)
        done = self.model_info(model)
        lines = done.stdout.splitlines()
        self.assertIn(f"model: {model}", lines)
        self.assertTrue(any(line.startswith("card: ") for line in lines), done.stdout)
        for key in DESCRIPTION:
            self.assertIn(f"{key}: {EXPECTED[key]}", lines)
        shown = settings_shown(done.stdout)
        described = ("mgpr_card", "description", *DESCRIPTION, *LIMITS)
        settings = {key: value for key, value in EXPECTED.items() if key not in described}
        # The detector's limits: the card's, and the network's own (read without its operators
        # library: not read, and said so).
        self.assertIn("detections_per_img: 500 (the most boxes it returns for a tile; tiles that reach it are "
                      "counted and named)", lines)
        self.assertIn("topk_candidates: 2000", lines)
        self.assertTrue(any(line.startswith("the model's own limits: not read") for line in lines), done.stdout)
        self.assertEqual(sorted(shown), sorted(settings), done.stdout)
        for key, value in settings.items():
            with self.subTest(key=key):
                if isinstance(value, float):
                    self.assertAlmostEqual(shown[key], value, places=12)
                elif isinstance(value, list) and isinstance(value[0], float):
                    self.assertEqual(len(shown[key]), len(value))
                    for got, want in zip(shown[key], value):
                        self.assertAlmostEqual(got, want, places=12)
                else:
                    self.assertEqual(shown[key], value)
                    self.assertIs(type(shown[key]), type(value))

    def test_a_file_without_a_card_is_shown_as_such(self):
        model = self.export("retinanet", "plain.pt", "--num-classes", "2", "--no-card")
        with zipfile.ZipFile(model) as archive:
            self.assertFalse(any(name.endswith("/extra/mgpr.json") for name in archive.namelist()))
        done = self.model_info(model)
        self.assertIn(f"model: {model}", done.stdout.splitlines())
        self.assertTrue(any(line.startswith("card: none") for line in done.stdout.splitlines()), done.stdout)
        self.assertEqual(settings_shown(done.stdout), {}, done.stdout)

    def test_a_card_with_a_key_mgpr_does_not_know_is_refused_by_name(self):
        import torch

        import mgpr_export
        with self.assertRaisesRegex(ValueError, "gsd_m"):
            mgpr_export.check_card({"mgpr_card": 1, "gsd_m": 0.1})
        # Plain torch.jit.save, as docs/models.md shows it, with a misspelt key.
        model = self.folder / "misspelt.pt"
        scripted = torch.jit.script(torch.nn.Conv2d(3, 2, 1))
        torch.jit.save(scripted, str(model), _extra_files={"mgpr.json": json.dumps({"mgpr_card": 1, "gsd_m": 0.1})})
        done = self.model_info(model, succeeds=False)
        self.assertIn("gsd_m", done.stderr)

    def test_a_card_naming_another_number_of_classes_than_the_model_has_is_refused(self):
        import mgpr_export
        network = mgpr_export.wrap("deeplabv3", mgpr_export.build_torchvision("deeplabv3", 3, 0, 128))
        model = self.folder / "two_names_three_classes.pt"
        mgpr_export.save_for_mgpr(network, str(model), mgpr_export.model_card(
            task="segment", class_names=["ground", "crown"], tile_size=128))
        self.model_info(model)  # the card itself is well formed (skips where mgpr has no --model-info)
        image = self.folder / "small.tif"
        subprocess.run([str(Path(self.bin) / "mgpr-test-image"), str(image), "--size", "128"], check=True,
                       capture_output=True, timeout=120)
        done = self.mgpr(str(image), f"model={model}", f"output_dir={self.folder / 'refused'}", "accelerator=cpu",
                         expect=2)
        self.assertIn("class_names", done.stderr)
        self.assertFalse((self.folder / "refused" / "small_segmentation.vrt").exists())

    def test_deepforests_tree_model_with_its_card_runs_with_no_keys_but_the_model(self):
        import mgpr_export
        model = self.export("deepforest", "deepforest_trees.pt", "--version", "1.4.0")
        card = card_in(model)
        # torchvision's own limits, recorded as the network has them.
        self.assertEqual(card, mgpr_export.deepforest_card(version="1.4.0", detections_per_img=300,
                                                           topk_candidates=1000))
        self.assertEqual((card["task"], card["class_names"], card["tile_size"], card["overlap"], card["gsd"],
                          card["score_threshold"], card["iou_threshold"], card["class_aware_nms"]),
                         ("detect", ["Tree"], 400, 20, 0.1, 0.1, 0.15, False))
        self.assertAlmostEqual(card["scale"], 1 / 255)
        self.assertNotIn("mean", card)  # torchvision's transform normalises inside the network
        shown = settings_shown(self.model_info(model).stdout)
        self.assertEqual(shown["class_names"], ["Tree"])
        self.assertEqual(shown["tile_size"], 400)
        # The keys the card sets come from it in `mgpr --cfg job`, marked so.
        image = self.folder / "trees.tif"  # 0.1 m pixels, as the card's gsd
        subprocess.run([str(Path(self.bin) / "mgpr-test-image"), str(image), "--size", "256", "--square", "60,60,40"],
                       check=True, capture_output=True, timeout=120)
        job = self.mgpr("--cfg", "job", str(image), f"model={model}").stdout
        for key in ("task", "class_names", "tile_size", "overlap", "gsd", "iou_threshold", "class_aware_nms"):
            line = next((line for line in job.splitlines() if line.startswith(f"{key} = ")), "")
            self.assertIn("# model card", line, f"{key}'s origin in --cfg job:\n{job}")
        # An override still wins over the card.
        job = self.mgpr("--cfg", "job", str(image), f"model={model}", "iou_threshold=0.4").stdout
        self.assertRegex(job, r"(?m)^iou_threshold = 0\.4\b.*override")
        if not self.operators:
            self.skipTest("no torchvision operators library given (--operators): the run itself is not tried")
        out = self.folder / "deepforest-run"
        self.mgpr(str(image), f"model={model}", f"output_dir={out}", f"model_libraries={self.operators}",
                  "accelerator=cpu", "precision=fp32")
        self.assertTrue((out / "trees_detections.csv").is_file(), "the card's task=detect: boxes are written")

    def test_a_crop_classifier_with_its_card_names_the_class_of_every_box(self):
        import mgpr_export
        model = self.export("cropmodel", "crops.pt", "--classes", "oak", "pine")
        card = card_in(model)
        self.assertEqual(card, mgpr_export.model_card(**{**mgpr_export.CROPMODEL_CARD,
                                                         "class_names": ["oak", "pine"]}))
        self.assertEqual((card["task"], card["tile_size"], card["bands"]), ("classify", 224, [1, 2, 3]))
        image = self.folder / "crowns.tif"
        subprocess.run([str(Path(self.bin) / "mgpr-test-image"), str(image), "--size", "256", "--square", "60,60,40",
                        "--square", "150,150,30"], check=True, capture_output=True, timeout=120)
        detector = self.folder / "squares.pt"
        subprocess.run([str(Path(self.bin) / "mgpr-test-model"), "detector", str(detector)], check=True,
                       capture_output=True, timeout=120)
        out = self.folder / "crops-run"
        self.mgpr(str(image), f"model={detector}", "task=detect", "tile_size=128", "overlap=48", f"output_dir={out}",
                  f"classify_model={model}", "crop_margin=4", "accelerator=cpu", "precision=fp32")
        with open(out / "crowns_detections.csv", newline="") as table:
            rows = list(csv.DictReader(table))
        self.assertEqual(len(rows), 2, rows)
        for row in rows:
            self.assertIn(row["crop_label_name"], ("oak", "pine"))
            self.assertEqual(row["crop_label_name"], ["oak", "pine"][int(row["crop_label"])])
            self.assertGreaterEqual(float(row["crop_score"]), 0.5)


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True, help="folder of mgpr and mgpr-test-image")
    parser.add_argument("--operators", default="", help="torchvision's operators built for mgpr's LibTorch")
    options, rest = parser.parse_known_args()
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError as missing:
        print(f"SKIPPED: {sys.executable} lacks {missing.name}")
        sys.exit(77)
    ModelCards.bin, ModelCards.operators = Path(options.bin), options.operators
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)
