"""bench/gpu-check's parts that run anywhere: the carry's check (bench/gpu_carry.py: NEEDED
lists read from real ELF files, the size limit), the box comparison and the parsing of
the programs' and nvidia-smi's figures (bench/gpu_figures.py), the step runner's limits,
and --plan, as scripts/test runs it."""
import importlib.machinery
import importlib.util
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


sys.path.insert(0, str(REPO / "bench"))
import gpu_carry  # noqa: E402
import gpu_figures  # noqa: E402


def load_check():
    loader = importlib.machinery.SourceFileLoader("gpu_check", str(REPO / "bench" / "gpu-check"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


check = load_check()
# A real dynamically linked program of this machine, standing in for the carry's.
PROGRAM = Path(shutil.which("true") or "/bin/true").resolve()


def readelf_needed(path: Path):
    if not shutil.which("readelf"):
        return None
    output = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True, check=True).stdout
    return [line.split("[", 1)[1].rstrip("]") for line in output.splitlines() if "(NEEDED)" in line]


class CarryTest(unittest.TestCase):
    def make_carry(self, folder: Path, provided, programs=gpu_carry.PROGRAMS) -> Path:
        carry = folder / "carry"
        (carry / "bin").mkdir(parents=True)
        (carry / "lib").mkdir()
        for name in programs:
            shutil.copy(PROGRAM, carry / "bin" / name)
        shutil.copy(PROGRAM, carry / gpu_carry.OPERATORS)
        (carry / "wheel-libraries").write_text("\n".join(provided) + "\n")
        return carry

    def test_needed_names_match_readelf(self):
        needed = gpu_carry.elf_needed(PROGRAM)
        self.assertIn("libc.so.6", needed)
        expected = readelf_needed(PROGRAM)
        if expected is not None:
            self.assertEqual(needed, expected)

    def test_a_carry_whose_libraries_the_wheel_provides_passes(self):
        with tempfile.TemporaryDirectory() as folder:
            carry = self.make_carry(Path(folder), gpu_carry.elf_needed(PROGRAM))
            self.assertEqual(gpu_carry.check_carry(carry), [])

    def test_a_library_the_wheel_lacks_is_named_for_each_binary(self):
        with tempfile.TemporaryDirectory() as folder:
            provided = [name for name in gpu_carry.elf_needed(PROGRAM) if name != "libc.so.6"]
            carry = self.make_carry(Path(folder), provided)
            problems = gpu_carry.check_carry(carry)
            self.assertEqual(len(problems), len(gpu_carry.PROGRAMS) + 1)
            self.assertTrue(all("needs libc.so.6" in problem for problem in problems), problems)
            self.assertIn("bin/mgpr needs", problems[0])

    def test_a_missing_binary_and_the_size_limit(self):
        with tempfile.TemporaryDirectory() as folder:
            carry = self.make_carry(Path(folder), gpu_carry.elf_needed(PROGRAM))
            (carry / "bin" / "mgpr").unlink()
            with open(carry / "padding", "wb") as padding:
                padding.truncate(gpu_carry.CARRY_LIMIT_BYTES + 1)
            problems = gpu_carry.check_carry(carry)
            self.assertIn("bin/mgpr is missing", problems)
            self.assertTrue(any("over the 50 MiB" in problem for problem in problems), problems)

    def test_the_end_to_end_carry_counts_the_libraries_it_packs(self):
        with tempfile.TemporaryDirectory() as folder:
            provided = [name for name in gpu_carry.elf_needed(PROGRAM) if name != "libc.so.6"]
            carry = self.make_carry(Path(folder), provided, gpu_carry.GDAL_PROGRAMS)
            (carry / gpu_carry.LIBRARIES).write_bytes(b"")
            self.assertEqual(gpu_carry.carry_programs(carry), gpu_carry.GDAL_PROGRAMS)
            problems = gpu_carry.check_carry(carry)
            self.assertEqual(len(problems), len(gpu_carry.GDAL_PROGRAMS) + 1, problems)
            self.assertTrue(all("needs libc.so.6" in problem for problem in problems), problems)
            (carry / gpu_carry.CARRIED).write_text("libc.so.6\n")
            self.assertEqual(gpu_carry.check_carry(carry), [])

    def test_no_wheel_list_says_how_to_build_one(self):
        with tempfile.TemporaryDirectory() as folder:
            problems = gpu_carry.check_carry(Path(folder))
            self.assertEqual(len(problems), 1)
            self.assertIn("scripts/build-for-gpu", problems[0])

    def test_a_file_that_is_not_elf_is_refused(self):
        with tempfile.TemporaryDirectory() as folder:
            text = Path(folder) / "script"
            text.write_text("#!/bin/sh\n")
            with self.assertRaises(ValueError):
                gpu_carry.elf_needed(text)


class FiguresTest(unittest.TestCase):
    def test_boxes_matched_by_label_and_iou(self):
        reference = {0: [(0, 0, 10, 10, 0.9, 1), (20, 20, 30, 30, 0.8, 1)], 1: [(0, 0, 10, 10, 0.7, 2)]}
        # Tile 0: one box moved by a tenth of a pixel (IoU 0.98), one gone; tile 1: the
        # right place with another label; tile 2: a box the reference does not have.
        candidate = {0: [(0.1, 0, 10.1, 10, 0.9, 1)], 1: [(0, 0, 10, 10, 0.7, 3)], 2: [(5, 5, 9, 9, 0.5, 1)]}
        self.assertEqual(gpu_figures.match_boxes(reference, candidate, range(3)), (1, 4))
        self.assertEqual(gpu_figures.match_boxes(reference, reference, range(3)), (3, 3))
        self.assertEqual(gpu_figures.match_boxes(reference, candidate, [0], threshold=0.99), (0, 2))

    def test_each_candidate_box_matches_once(self):
        reference = {0: [(0, 0, 10, 10, 0.9, 1), (0, 0, 10, 10, 0.8, 1)]}
        candidate = {0: [(0, 0, 10, 10, 0.9, 1)]}
        self.assertEqual(gpu_figures.match_boxes(reference, candidate, [0]), (1, 2))

    def test_boxes_file(self):
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "boxes.csv"
            path.write_text("tile,x1,y1,x2,y2,score,label\n3,1.5,2,3,4,0.25,7\n3,0,0,1,1,0.5,0\n")
            expected = {3: [(1.5, 2.0, 3.0, 4.0, 0.25, 7), (0.0, 0.0, 1.0, 1.0, 0.5, 0)]}
            self.assertEqual(gpu_figures.read_boxes(path), expected)

    def test_bench_figures(self):
        text = ("mgpr model-only: 571.30 tiles/s (median of 3)\nmgpr end-to-end: 555.10 tiles/s (median of 3)\n"
                "mgpr end-to-end / model-only = 0.972 (tile 1024, ...)\n"
                "mgpr device (last round): NVIDIA H100 busy 97.5% of end-to-end, memory avg 3.1 GiB\n")
        self.assertEqual(gpu_figures.bench_figures(text),
                         {"model_only": 571.3, "end_to_end": 555.1, "ratio": 0.972, "busy": 97.5})

    def test_dmon_samples_and_busy_while_running(self):
        text = ("# gpu    sm   mem   enc   dec   jpg   ofa\n# Idx     %     %     %     %     %     %\n"
                "    0     0     0     0     0     0     0\n    0    96    40     0     0     0     0\n"
                "    0    99    45     0     0     0     0\n    0    97    41     0     0     0     0\n"
                "    0     0     0     0     0     0     0\n")
        samples = gpu_figures.dmon_busy(text)
        self.assertEqual(samples, [0, 96, 99, 97, 0])
        self.assertEqual(gpu_figures.busy_while_running(samples), 97)
        self.assertEqual(gpu_figures.busy_while_running([0, 0]), 0.0)


class RunTest(unittest.TestCase):
    def test_a_step_is_stopped_at_its_limit_and_says_so(self):
        with tempfile.TemporaryDirectory() as folder:
            run = check.Check(Path(folder), Path(folder), budget_s=60)
            status, output, seconds = run.run("slow", "sleeper", ["sh", "-c", "echo started; sleep 30"], 1)
            self.assertEqual(status, 124)
            self.assertIn("started", output)
            self.assertLess(seconds, 10)
            results = (Path(folder) / "results.txt").read_text()
            self.assertIn("sleeper: exit 124 after", results)
            self.assertIn("(time limit)", results)
            self.assertIn("$ sh -c echo started; sleep 30", (Path(folder) / "steps" / "slow.log").read_text())

    def test_a_limit_is_cut_to_what_is_left_of_the_budget(self):
        with tempfile.TemporaryDirectory() as folder:
            run = check.Check(Path(folder), Path(folder), budget_s=7)
            status, _, seconds = run.run("slow", "sleeper", ["sleep", "30"], 25)
            self.assertEqual(status, 124)
            self.assertLess(seconds, 5, "7 s of budget less the 5 s kept back leave 2")

    def test_a_program_that_is_missing_is_recorded_not_raised(self):
        with tempfile.TemporaryDirectory() as folder:
            run = check.Check(Path(folder), Path(folder), budget_s=60)
            status, _, _ = run.run("x", "nothing", [str(Path(folder) / "no-such-program")], 5)
            self.assertEqual(status, 127)
            self.assertIn("nothing: cannot be started", (Path(folder) / "results.txt").read_text())


class PlanTest(unittest.TestCase):
    def test_plan_names_every_step_with_its_limit(self):
        result = subprocess.run([sys.executable, str(REPO / "bench" / "gpu-check"), "--plan"], capture_output=True,
                                text=True, check=False)
        self.assertEqual(result.returncode, 0, result.stderr)
        for name, limit, _ in check.STEPS:
            self.assertRegex(result.stdout, rf"\n  {name} +{limit} s ")
        self.assertLessEqual(check.BUDGET_S, 510, "a GPU call must fit 8½ minutes")

    def test_run_without_a_carry_says_how_to_make_one(self):
        with tempfile.TemporaryDirectory() as folder:
            result = subprocess.run([sys.executable, str(REPO / "bench" / "gpu-check"), "--run", "--carry", folder,
                                     "--out", folder], capture_output=True, text=True, check=False)
            self.assertEqual(result.returncode, 2)
            self.assertIn("scripts/build-for-gpu", result.stderr)


if __name__ == "__main__":
    unittest.main()
