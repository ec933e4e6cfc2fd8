"""bench/gpu-check's parts that run anywhere: the carry's check (bench/gpu_carry.py: NEEDED
lists read from real ELF files, the size limit), the box comparison and the parsing of
the programs' and nvidia-smi's figures (bench/gpu_figures.py), the step runner's limits
and line times (bench/gpu_runner.py), the plan's fit (bench/gpu_plan.py), and --plan, as
scripts/test runs it."""
import importlib.machinery
import importlib.util
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


sys.path.insert(0, str(REPO / "bench"))
import gpu_carry  # noqa: E402
import gpu_figures  # noqa: E402
import gpu_plan  # noqa: E402


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


def make_carry(folder: Path, provided, programs=gpu_carry.PROGRAMS) -> Path:
    """A carry in FOLDER/carry whose programs are PROGRAM, the wheel providing PROVIDED."""
    carry = folder / "carry"
    (carry / "bin").mkdir(parents=True)
    (carry / "lib").mkdir()
    for name in programs:
        shutil.copy(PROGRAM, carry / "bin" / name)
    shutil.copy(PROGRAM, carry / gpu_carry.OPERATORS)
    (carry / "wheel-libraries").write_text("\n".join(provided) + "\n")
    return carry


class CarryTest(unittest.TestCase):

    def test_needed_names_match_readelf(self):
        needed = gpu_carry.elf_needed(PROGRAM)
        self.assertIn("libc.so.6", needed)
        expected = readelf_needed(PROGRAM)
        if expected is not None:
            self.assertEqual(needed, expected)

    def test_a_carry_whose_libraries_the_wheel_provides_passes(self):
        with tempfile.TemporaryDirectory() as folder:
            carry = make_carry(Path(folder), gpu_carry.elf_needed(PROGRAM))
            self.assertEqual(gpu_carry.check_carry(carry), [])

    def test_a_library_the_wheel_lacks_is_named_for_each_binary(self):
        with tempfile.TemporaryDirectory() as folder:
            provided = [name for name in gpu_carry.elf_needed(PROGRAM) if name != "libc.so.6"]
            carry = make_carry(Path(folder), provided)
            problems = gpu_carry.check_carry(carry)
            self.assertEqual(len(problems), len(gpu_carry.PROGRAMS) + 1)
            self.assertTrue(all("needs libc.so.6" in problem for problem in problems), problems)
            self.assertIn("bin/mgpr needs", problems[0])

    def test_a_missing_binary_and_the_size_limit(self):
        with tempfile.TemporaryDirectory() as folder:
            carry = make_carry(Path(folder), gpu_carry.elf_needed(PROGRAM))
            (carry / "bin" / "mgpr").unlink()
            with open(carry / "padding", "wb") as padding:
                padding.truncate(gpu_carry.CARRY_LIMIT_BYTES + 1)
            problems = gpu_carry.check_carry(carry)
            self.assertIn("bin/mgpr is missing", problems)
            self.assertTrue(any("over the 50 MiB" in problem for problem in problems), problems)

    def test_the_end_to_end_carry_counts_the_libraries_it_packs(self):
        with tempfile.TemporaryDirectory() as folder:
            provided = [name for name in gpu_carry.elf_needed(PROGRAM) if name != "libc.so.6"]
            carry = make_carry(Path(folder), provided, gpu_carry.GDAL_PROGRAMS)
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

    def test_boxes_near_the_score_threshold_pair_off_but_count_for_neither(self):
        # A sure box moved a tenth of a pixel; one just above the threshold on each side,
        # at different places: a rounding difference moved which crossed it.
        reference = {0: [(0, 0, 10, 10, 0.95, 1), (20, 20, 30, 30, 0.805, 1)]}
        candidate = {0: [(0.1, 0, 10.1, 10, 0.95, 1), (40, 40, 50, 50, 0.806, 1)]}
        self.assertEqual(gpu_figures.match_boxes(reference, candidate, [0]), (1, 2))
        self.assertEqual(gpu_figures.match_boxes(reference, candidate, [0], sure_from=0.81), (1, 1))
        # A sure box the candidate lacks still counts, whatever the candidate has near the threshold.
        self.assertEqual(gpu_figures.match_boxes(reference, {0: candidate[0][1:]}, [0], sure_from=0.81), (0, 1))

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
                "mgpr device (last round): NVIDIA H100 forward passes 197.5% of end-to-end (summed over the passes "
                "in flight), memory avg 3.1 GiB\n")
        self.assertEqual(gpu_figures.bench_figures(text),
                         {"model_only": 571.3, "end_to_end": 555.1, "ratio": 0.972, "passes": 197.5})

    def test_boxes_written_as_the_bench_writes_them_read_back(self):
        boxes = {2: [(1.0, 2.0, 30.5, 40.25, 0.75, 1)], 0: [(0.0, 0.0, 1.0, 1.0, 0.125, 0)]}
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "eager.csv"
            gpu_figures.write_boxes(path, boxes)
            self.assertEqual(gpu_figures.read_boxes(path), boxes)

    def test_boxes_near_the_threshold_are_counted(self):
        boxes = {0: [(0, 0, 1, 1, 0.805, 0), (0, 0, 1, 1, 0.83, 0)], 1: [(0, 0, 1, 1, 0.809, 1)]}
        self.assertEqual(gpu_figures.near_threshold(boxes, range(2), 0.8), 2)
        self.assertEqual(gpu_figures.near_threshold(boxes, [0], 0.8), 1)

    def test_utilisation_samples_and_busy_over_a_window(self):
        text = ("2026/11/28 22:00:00.000, 0\n2026/11/28 22:00:00.100, 100\n2026/11/28 22:00:00.200, 50\n"
                "Failed to query\n2026/11/28 22:00:00.300, 100\n2026/11/28 22:00:00.400, 0\n")
        samples = gpu_figures.utilisation_samples(text)
        self.assertEqual([value for _, value in samples], [0, 100, 50, 100, 0])
        self.assertAlmostEqual(samples[1][0] - samples[0][0], 0.1, places=3)
        # Busy is the samples' mean over the window the loop names: start-up and exit left out.
        window = (samples[1][0], samples[3][0])
        self.assertEqual(gpu_figures.busy_over(samples, window), (250 / 3, 3))
        busy, count = gpu_figures.busy_over(samples, None)
        self.assertEqual(count, 0)
        self.assertNotEqual(busy, busy, "no window: nan")


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

    def test_the_window_a_line_names_ends_when_the_line_came(self):
        with tempfile.TemporaryDirectory() as folder:
            run = check.Check(Path(folder), Path(folder), budget_s=60)
            started = time.time()
            run.run("x", "loop", ["sh", "-c", "sleep 1; echo 'rank 0: done, 8 tiles in 2 batches, 0.50 s'; sleep 3"],
                    10)
            ended = time.time()
            window = run.window_before(r"rank 0: done, \d+ tiles in \d+ batches, ([0-9.]+) s")
            self.assertAlmostEqual(window[1] - window[0], 0.5)
            self.assertGreater(window[1], started + 0.9, "the line came after the first second, not at the exit")
            # Three seconds separate the line from the exit, however loaded the machine.
            self.assertLess(window[1], ended - 2)
            self.assertIsNone(run.window_before(r"no such line ([0-9.]+)"))

    def test_a_program_that_is_missing_is_recorded_not_raised(self):
        with tempfile.TemporaryDirectory() as folder:
            run = check.Check(Path(folder), Path(folder), budget_s=60)
            status, _, _ = run.run("x", "nothing", [str(Path(folder) / "no-such-program")], 5)
            self.assertEqual(status, 127)
            self.assertIn("nothing: cannot be started", (Path(folder) / "results.txt").read_text())


class PlanTest(unittest.TestCase):
    def test_plan_names_every_call_and_step_with_its_limit(self):
        result = subprocess.run([sys.executable, str(REPO / "bench" / "gpu-check"), "--plan"], capture_output=True,
                                text=True, check=False)
        self.assertEqual(result.returncode, 0, result.stderr)
        for call in gpu_plan.CALLS:
            self.assertIn(f"call {call.number}: ", result.stdout)
            self.assertIn(f"bench/gpu-check --run --call {call.number}", result.stdout)
            for step in call.steps:
                self.assertRegex(result.stdout, rf"\n  {step.name} +{step.limit_s} s ")

    def test_the_plan_fits_one_task(self):
        self.assertLessEqual(len(gpu_plan.CALLS), 2)
        self.assertLessEqual(sum(gpu_plan.call_budget_s(call) for call in gpu_plan.CALLS), 660)
        self.assertEqual(gpu_plan.plan_problems(gpu_plan.CALLS, Path(tempfile.gettempdir()), check.known_steps()), [])
        first = gpu_plan.CALLS[0]
        self.assertEqual([step.name for step in first.steps][:5], ["versions", "models", "defaults", "boxes",
                                                                    "lightning"], "call 1 makes the headline table")

    def test_a_plan_that_does_not_fit_is_refused(self):
        step = gpu_plan.Step("versions", 400, "")
        calls = [gpu_plan.Call(number, ".none", "", (step,)) for number in (1, 2, 3)]
        problems = gpu_plan.plan_problems(calls, Path(tempfile.gettempdir()), {"versions"})
        self.assertIn("3 calls, more than 2", problems)
        self.assertIn("the steps' limits add up to 1200 s, over 660 s", problems)
        unknown = [gpu_plan.Call(1, ".none", "", (gpu_plan.Step("warp", 10, ""),))]
        self.assertEqual(gpu_plan.plan_problems(unknown, Path(tempfile.gettempdir()), {"versions"}),
                         ["call 1: no step named warp"])

    def test_a_carry_built_too_big_to_travel_is_refused(self):
        with tempfile.TemporaryDirectory() as folder:
            carry = make_carry(Path(folder), gpu_carry.elf_needed(PROGRAM))
            with open(carry / "padding", "wb") as padding:
                padding.truncate((gpu_plan.CARRY_LIMIT_MIB + 1) * 2**20)
            calls = [gpu_plan.Call(1, "carry", "", (gpu_plan.Step("versions", 10, ""),))]
            problems = gpu_plan.plan_problems(calls, Path(folder), {"versions"})
            self.assertTrue(any("over 60 MiB" in problem for problem in problems), problems)

    def test_every_step_of_the_plan_is_a_method(self):
        for call in gpu_plan.CALLS:
            for step in call.steps:
                self.assertTrue(callable(getattr(check.Check, step.name.replace("-", "_"), None)), step.name)

    def test_a_rehearsal_without_a_build_says_how_to_make_one(self):
        with tempfile.TemporaryDirectory() as folder:
            result = subprocess.run([sys.executable, str(REPO / "bench" / "gpu-check"), "--rehearse", "--build",
                                     folder, "--out", folder], capture_output=True, text=True, check=False)
            self.assertEqual(result.returncode, 2)
            self.assertIn("scripts/build builds it", result.stderr)

    def test_run_without_a_carry_says_how_to_make_one(self):
        with tempfile.TemporaryDirectory() as folder:
            result = subprocess.run([sys.executable, str(REPO / "bench" / "gpu-check"), "--run", "--call", "1",
                                     "--carry", folder, "--out", folder], capture_output=True, text=True, check=False)
            self.assertEqual(result.returncode, 2)
            self.assertIn("scripts/build-for-gpu", result.stderr)


if __name__ == "__main__":
    unittest.main()
