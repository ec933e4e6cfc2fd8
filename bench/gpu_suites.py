"""The steps of bench/gpu-check beyond the headline table: the card's test programs, two
ranks on one card refused, the crop classifier's crops a second, and with the end-to-end
carry (scripts/build-for-gpu --gdal) the `mgpr` suites on GeoTIFFs and a DeepForest-shaped
detect run alone and with its crop classifier.
"""
import re
import shutil
import time
from pathlib import Path

from gpu_carry import OPERATORS, carry_programs

BENCH = Path(__file__).resolve().parent
# The `mgpr` suites the gdal-tests step runs from the end-to-end carry.
GDAL_TEST_FILTER = "CropClasses.*"


class SuiteSteps:
    """Mixed into bench/gpu-check's Check (bench/gpu_runner.py's Runner)."""

    def gpu_tests(self, limit):
        ended = time.monotonic() + limit
        env = self.carry_env("gpu-tests")
        if env is None:
            return
        env = dict(env, MGPR_COMM_RANK_EXE=self.bin("mgpr-comm-rank"))
        for program in ("mgpr_gpu_tests", "mgpr_nccl_tests", "mgpr_crop_classifier_tests"):
            if program in carry_programs(self.carry):
                self.test_program("gpu-tests", program, ended, env, test_limit=20)
            else:
                self.record(f"{program}: not in this carry")

    def refusal(self, limit):
        # One GPU named twice (CUDA itself then shows none), and two ranks asked of one GPU.
        for visible in ("0,0", "0"):
            env = dict(self.env, CUDA_VISIBLE_DEVICES=visible)
            status, output, seconds = self.run(
                "refusal", f"gpus=2 with CUDA_VISIBLE_DEVICES={visible}",
                [self.bin("mgpr"), "gpus=2", "accelerator=gpu", "use_fake_data=true", "dummy_dataset_count=64",
                 "tile_size=256", f"output_dir={self.work / 'refusal'}"], limit / 2, env=env, expect=(0, 1, 2, 124))
            lines = [line for line in output.splitlines() if "GPU" in line or "gpu" in line]
            self.record(f"refusal, CUDA_VISIBLE_DEVICES={visible} mgpr gpus=2: exit {status} in {seconds:.1f} s (want "
                        f"2 within seconds): {lines[-1].strip() if lines else output.strip()[-200:]}")

    def crops(self, limit):
        model = self.work / "resnet50.pt"
        if not model.is_file():
            self.run("crops", "export ResNet-50", [self.python, str(BENCH / "gpu_models.py"), str(self.work),
                                                   "resnet50"], limit / 3)
        # DeepForest's shape: 400² tiles, tens of trees a tile, crops of a few tens of px
        # resized to the classifier's 224² (its CropModel's). A rehearsal on a CPU runs a few.
        layout = ["--tiles", "1", "--boxes", "4", "--repeats", "1"] if self.rehearsal else [
            "--tiles", "8", "--boxes", "50", "--repeats", "16"]
        status, output, seconds = self.run(
            "crops", "crops bf16, batches of 128",
            [self.bin("mgpr-bench-crops"), model, "--input-size", "224", "--tile", "400", "--box-min", "20",
             "--box-max", "60", f"--accelerator={self.accelerator}", "--precision=bf16", "--threads", "4",
             "--batch=128", "--rounds", "3", *layout], self.step_left())
        line = next((line for line in output.splitlines() if line.startswith("mgpr crops ")), None)
        if status == 0 and line:
            self.record(f"ResNet-50 bf16: {line} ({seconds:.0f} s)")

    def gdal_tests(self, limit):
        # The end-to-end carry (scripts/build-for-gpu --gdal): its Debian libraries and
        # GDAL's and PROJ's data unpacked beside the work, then the `mgpr` suites that
        # the GPU changes, on GeoTIFFs the tests write.
        ended = time.monotonic() + limit
        if not self.end_to_end:
            self.record(f"not run: {self.carry} is not the end-to-end carry (scripts/build-for-gpu --gdal builds it)")
            return
        env = self.carry_env("gdal-tests")
        if env is not None:
            self.test_program("gdal-tests", "mgpr_cli_tests", ended, env, GDAL_TEST_FILTER, test_limit=40)

    def detect_classify(self, limit):
        # A whole detect run on a GeoTIFF, as a user's: DeepForest's tree detector alone,
        # then with DeepForest's CropModel's shape classifying every crown, so that what
        # classify_model= adds is measured with the reads, the merge and the writers.
        if not self.end_to_end:
            self.record(f"not run: {self.carry} is not the end-to-end carry (scripts/build-for-gpu --gdal builds it)")
            return
        env = self.carry_env("detect-classify")
        if env is None:
            return
        ended = time.monotonic() + limit
        models = [self.work / "deepforest.pt", self.work / "cropmodel.pt"]
        if not all(model.is_file() for model in models):
            exporter = [self.python, str(BENCH / "gpu_models.py"), str(self.work)]
            self.run("detect-classify", "export", [*exporter, "deepforest", "cropmodel"], limit / 3)
        image = self.work / "forest.tif"
        side = 1200 if self.rehearsal else 8000
        if not image.is_file():
            status, _, seconds = self.run("detect-classify", "mgpr-test-image",
                                          [self.bin("mgpr-test-image"), image, "--size", str(side)], limit / 5, env=env)
            self.record(f"forest.tif, {side}² px: exit {status} in {seconds:.1f} s")
        common = [image, f"model={models[0]}", "task=detect", f"accelerator={self.accelerator}", "precision=bf16",
                  "batch_size=16", "workers=8", "threads=4", "resume=false",
                  f"model_libraries={self.carry / OPERATORS}"]
        for round_number in (1, 2):
            for classify in (False, True):
                left = ended - time.monotonic()
                if left < 10:
                    self.record(f"round {round_number}: not run (the step's time ran out)")
                    return
                name = "classified" if classify else "detected"
                out = self.work / f"forest-{name}"
                shutil.rmtree(out, ignore_errors=True)
                extra = [f"classify_model={models[1]}"] if classify else []
                status, output, seconds = self.run("detect-classify", f"{name} {round_number}",
                                                   [self.bin("mgpr"), *common, f"output_dir={out}", *extra],
                                                   left / 2, env=env)
                loop = re.search(r"rank 0: done, (\d+) tiles in \d+ batches, ([0-9.]+) s", output)
                table = out / "forest_detections.csv"
                boxes = table.read_text().count("\n") - 1 if table.is_file() else -1
                self.record(f"{name}, round {round_number}: exit {status}, wall {seconds:.1f} s, "
                            f"{f'{loop.group(1)} tiles in {loop.group(2)} s' if loop else 'no loop figure'}, "
                            f"{boxes} boxes")
