"""How bench/gpu-check runs a program on the GPU machine: under a limit that never passes
the call's budget, its output logged per step with the time each line came, and the
card's utilisation sampled meanwhile (nvidia-smi), so a figure can be read over the
window a program names.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from gpu_carry import LIBRARIES
from gpu_figures import utilisation_samples


class UtilisationSampler:
    """nvidia-smi's utilization.gpu (the share of each sample period in which one kernel or
    more ran: a union over streams, never a sum) every 100 ms, from start() to stop().
    On a machine without nvidia-smi it samples nothing."""

    def __init__(self):
        self.process = None
        self.text = ""

    def start(self):
        # Line-buffered: a pipe's full buffer would hold the last seconds' samples back.
        line_buffered = ["stdbuf", "-oL"] if shutil.which("stdbuf") else []
        try:
            self.process = subprocess.Popen(
                [*line_buffered, "nvidia-smi", "--query-gpu=timestamp,utilization.gpu", "--format=csv,noheader,nounits",
                 "-lms", "100"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        except OSError:
            self.process = None
        return self

    def stop(self) -> list:
        """The samples, [(seconds since the epoch, percent), ...]."""
        if self.process is None:
            return []
        # SIGINT, as Ctrl-C: nvidia-smi ends its loop and flushes what it printed.
        os.killpg(self.process.pid, signal.SIGINT)
        try:
            self.text, _ = self.process.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.text, _ = self.process.communicate()
        return utilisation_samples(self.text)


class Runner:
    """One call on the GPU machine (or its rehearsal on a CPU): a budget, a log, the
    results file, the carry's programs."""

    def __init__(self, out: Path, carry: Path, budget_s: int, rehearsal: bool = False, end_to_end: bool = False):
        self.rehearsal = rehearsal
        self.end_to_end = end_to_end  # the carry with GDAL (scripts/build-for-gpu --gdal)
        self.accelerator = "cpu" if rehearsal else "gpu"
        self.out = out
        self.carry = carry
        self.work = Path(os.environ.get("TMPDIR", "/tmp")) / "mgpr-gpu-check"
        self.started = time.monotonic()
        self.budget_s = budget_s
        self.python = sys.executable
        out.mkdir(parents=True, exist_ok=True)
        (out / "steps").mkdir(exist_ok=True)
        self.work.mkdir(parents=True, exist_ok=True)
        self.results = open(out / "results.txt", "a", buffering=1)
        self.env = dict(os.environ)
        self.step_ends = time.monotonic() + budget_s
        self.table = []  # the headline table's lines, as the steps measure them
        self.line_times = []  # the last run's output: [(seconds since the epoch, line), ...]

    def left(self) -> float:
        return self.budget_s - (time.monotonic() - self.started)

    def step_left(self) -> float:
        """What is left of the running step's limit (step_ends, set as each step starts)."""
        return max(1.0, self.step_ends - time.monotonic())

    def run_limit(self, runs_left: int, least_s: float) -> float:
        """The limit of the next of RUNS_LEFT runs in the step: its even share of what is
        left, or more when the others can still have LEAST_S each (the first runs are the
        ones the table needs most)."""
        return max(self.step_left() / runs_left, self.step_left() - least_s * (runs_left - 1))

    def record(self, line: str) -> None:
        print(line, flush=True)
        self.results.write(line + "\n")

    def count(self, tiles: int) -> int:
        """A step's tile count; a rehearsal on a CPU runs two: it tries the commands, its
        figures are none to keep."""
        return 2 if self.rehearsal else tiles

    def batch(self, tiles: int) -> int:
        """A step's batch size; a rehearsal's CPU warms each program up on batches of two."""
        return 2 if self.rehearsal else tiles

    def bin(self, name: str) -> str:
        return str(self.carry / "bin" / name)

    def carry_env(self, step: str):
        """The environment the carry's programs run in. The end-to-end carry's libraries
        and GDAL's and PROJ's data are unpacked into the work folder first (once); None
        when that fails. A rehearsal's programs find their libraries and data here."""
        if not self.end_to_end:
            return self.env
        if self.rehearsal:
            return dict(self.env, MGPR_TEST_PROGRAMS=str(self.carry / "bin"))
        if not (self.work / "lib").is_dir():
            status, _, seconds = self.run(step, f"unpack {LIBRARIES}",
                                          ["tar", "-C", self.work, "-xJf", self.carry / LIBRARIES], 60)
            self.record(f"unpacked {LIBRARIES}: exit {status} in {seconds:.1f} s")
            if status != 0:
                return None
        share = self.work / "share"
        search = [str(self.work / "lib"), self.env.get("LD_LIBRARY_PATH", "")]
        return dict(self.env, LD_LIBRARY_PATH=os.pathsep.join(filter(None, search)), GDAL_DATA=str(share / "gdal"),
                    PROJ_DATA=str(share / "proj"), PROJ_LIB=str(share / "proj"),
                    MGPR_TEST_PROGRAMS=str(self.carry / "bin"))

    def run(self, step: str, label: str, command, limit: float, env=None, expect=(0,)):
        """Runs COMMAND with at most LIMIT seconds (and never past the budget); its output
        goes to steps/STEP.log, each line's arrival time to self.line_times. Returns
        (exit status, output, seconds); 124 when stopped."""
        limit = max(1.0, min(limit, self.left() - 5))
        started = time.monotonic()
        self.line_times = []
        with open(self.out / "steps" / f"{step}.log", "a") as log:
            log.write(f"\n$ {' '.join(map(str, command))}   [{label}, limit {limit:.0f} s]\n")
            log.flush()
            try:
                process = subprocess.Popen([str(part) for part in command], stdout=subprocess.PIPE,
                                           stderr=subprocess.STDOUT, env=env or self.env, start_new_session=True,
                                           text=True, errors="replace")
            except OSError as error:
                self.record(f"  {label}: cannot be started: {error}")
                return 127, "", 0.0
            reader = threading.Thread(target=self._read_lines, args=(process.stdout,), daemon=True)
            reader.start()
            try:
                status = process.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                status = 124
            reader.join(timeout=5)
            process.stdout.close()
            output = "".join(line for _, line in self.line_times)
            log.write(output)
        seconds = time.monotonic() - started
        if status not in expect:
            self.record(f"  {label}: exit {status} after {seconds:.1f} s"
                        f"{' (time limit)' if status == 124 else ''}; last lines:")
            for line in output.strip().splitlines()[-6:]:
                self.record(f"    | {line}")
        return status, output, seconds

    def _read_lines(self, stream) -> None:
        for line in stream:
            self.line_times.append((time.time(), line))

    def window_before(self, pattern: str):
        """(start, end) in seconds since the epoch: the span a line of the last run's output
        names, as PATTERN's first group (seconds) ending when that line came; None when no
        line matches. The programs print a loop's seconds as it ends."""
        for arrived, line in self.line_times:
            match = re.search(pattern, line)
            if match:
                return arrived - float(match.group(1)), arrived
        return None

    def sampled(self, step, label, command, limit, env=None):
        """run() with the card's utilisation sampled meanwhile: (status, output, seconds,
        samples)."""
        sampler = UtilisationSampler().start()
        try:
            status, output, seconds = self.run(step, label, command, limit, env=env)
        finally:
            samples = sampler.stop()
        with open(self.out / "steps" / f"{step}.log", "a") as log:
            log.write(f"[{label}: {len(samples)} utilisation samples]\n{sampler.text}")
        return status, output, seconds, samples

    def test_program(self, step, program, ended, env, test_filter="*", test_limit=30):
        """Every test of PROGRAM that TEST_FILTER selects, each on its own under TEST_LIMIT
        seconds, until ENDED (time.monotonic()); one line of verdict a test."""
        status, listing, _ = self.run(step, f"{program} --gtest_list_tests",
                                      [self.bin(program), "--gtest_list_tests", f"--gtest_filter={test_filter}"], 10,
                                      env=env)
        tests, suite = [], ""
        for line in listing.splitlines():
            if line and not line.startswith(" "):
                suite = line.split()[0]
            elif line.startswith("  ") and suite:
                tests.append(suite + line.split()[0])
        for test in tests:
            left = ended - time.monotonic()
            if left < 3:
                self.record(f"test {test}: not run (the step's time ran out)")
                continue
            status, output, seconds = self.run(step, test, [self.bin(program), f"--gtest_filter={test}"],
                                               min(test_limit, left), env=env, expect=(0, 1, 124))
            verdict = ("SKIPPED" if "[  SKIPPED ]" in output else "PASSED") if status == 0 else (
                "TIMED OUT" if status == 124 else "FAILED")
            reason = ""
            if verdict == "SKIPPED":
                skipped = re.search(r"Skipped\s*\n?(.*)", output)
                reason = f" ({skipped.group(1).strip()})" if skipped else ""
            self.record(f"test {test}: {verdict} in {seconds:.1f} s{reason}")
