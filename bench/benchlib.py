"""What the benchmark drivers in bench/ share: settings from the environment, timed runs
of one program, the order contestants take in each round, medians, mgpr's rank
summaries and the CPU the figures were taken on.

Plain Python 3, no packages: the drivers run under Debian's python3 and on machines
whose only Python is a PyTorch installation's.
"""
import json
import os
import re
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# The CPU flags with which mgpr's precision=auto runs bf16 (the CPU computes it natively).
NATIVE_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})


def setting(name: str, default: str) -> str:
    """The environment's NAME, or DEFAULT when it is unset or empty (the drivers'
    settings are environment variables, as the commands in docs/benchmarks.md give them)."""
    return os.environ.get(name) or default


def int_setting(name: str, default: int) -> int:
    value = setting(name, str(default))
    try:
        return int(value)
    except ValueError:
        raise SystemExit(f"{name}={value}: a whole number is expected") from None


@dataclass
class Run:
    """One finished process: its exit status, wall time from launch to exit, and its
    peak resident memory (the kernel's maxrss of that process, in KiB)."""
    returncode: int
    wall_s: float
    peak_rss_kib: int

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def run_timed(command, *, env=None, cwd=None, stdout=None, stderr=None) -> Run:
    """Runs COMMAND (a list) to its end and times it from launch to exit, as a user waits
    for it. stdout and stderr: None (inherited), a path (written), or a file object."""
    files = []

    def target(where):
        if isinstance(where, (str, Path)):
            files.append(open(where, "wb"))
            return files[-1]
        return where

    try:
        out, err = target(stdout), target(stderr)
        started = time.monotonic()
        process = subprocess.Popen([str(part) for part in command], env=env, cwd=cwd, stdout=out, stderr=err)
        # wait4 rather than wait: the child's own resource usage, not all children's.
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.monotonic() - started
        process.returncode = os.waitstatus_to_exitcode(status)
    finally:
        for file in files:
            file.close()
    return Run(process.returncode, wall, usage.ru_maxrss)


def environment(**changes) -> dict:
    """This process's environment with CHANGES; a change to None removes the variable."""
    env = dict(os.environ)
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = str(value)
    return env


def reversed_every_other(contestants, round_number: int) -> list:
    """The order of round ROUND_NUMBER (from 1): as given in odd rounds, reversed in even
    ones, so that each contestant runs first in some round and none always follows the
    same one."""
    order = list(contestants)
    return order if round_number % 2 else order[::-1]


def rotated(contestants, round_number: int) -> list:
    """The order of round ROUND_NUMBER (from 1): the list rotated by the round's number,
    so that each contestant takes each place once every len(contestants) rounds."""
    order = list(contestants)
    return [order[(i + round_number) % len(order)] for i in range(len(order))]


def median(values) -> float:
    values = list(values)
    if not values:
        raise ValueError("the median of no values")
    return statistics.median(values)


def rate(tiles: int, seconds: float, digits: int = 3) -> float:
    return round(tiles / seconds, digits)


def rank_summaries(ranks_dir: Path) -> list:
    """mgpr's rank summaries (MGPR_LOG_DIR/rank-N.json), in rank order."""
    return [json.loads(path.read_text()) for path in sorted(Path(ranks_dir).glob("rank-*.json"))]


def tiles_of(ranks_dir: Path) -> int:
    """The tiles every rank of one mgpr run served."""
    return sum(summary["tiles"] for summary in rank_summaries(ranks_dir))


# mgpr's model line: "... on cpu in bf16 (auto: the CPU computes bf16 natively), autocast, ..."
_AUTO_PRECISION = re.compile(r" in (fp32|bf16|fp16) \(auto")


def auto_precision(stdout_text: str):
    """The precision mgpr's precision=auto chose, from the model line of its output;
    None when no such line is there."""
    found = _AUTO_PRECISION.search(stdout_text)
    return found.group(1) if found else None


@dataclass
class Cpu:
    name: str
    flags: frozenset

    @property
    def native_bf16(self) -> bool:
        return bool(self.flags & NATIVE_BF16_FLAGS)


def parse_lscpu(text: str) -> Cpu:
    """The CPU's model name and flags from lscpu's output (in the C locale)."""
    fields = {}
    for line in text.splitlines():
        key, colon, value = line.partition(":")
        if colon and key.strip() not in fields:
            fields[key.strip()] = value.strip()
    return Cpu(" ".join(fields.get("Model name", "unknown").split()), frozenset(fields.get("Flags", "").split()))


def parse_cpuinfo(text: str) -> Cpu:
    """The same from /proc/cpuinfo (its first processor)."""
    fields = {}
    for line in text.splitlines():
        key, colon, value = line.partition(":")
        if colon and key.strip() not in fields:
            fields[key.strip()] = value.strip()
    return Cpu(" ".join(fields.get("model name", "unknown").split()), frozenset(fields.get("flags", "").split()))


def this_cpu() -> Cpu:
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True,
                              env=environment(LC_ALL="C")).stdout
        cpu = parse_lscpu(text)
        if cpu.flags:
            return cpu
    except (OSError, subprocess.CalledProcessError):
        pass
    return parse_cpuinfo(Path("/proc/cpuinfo").read_text())


def cpu_count() -> int:
    """The CPUs this process may run on (as nproc counts them)."""
    return len(os.sched_getaffinity(0))


def describe_cpu() -> str:
    """'<model name>, <N> CPUs', the machine line of every driver's output."""
    return f"{this_cpu().name}, {cpu_count()} CPUs"


def output_of(command, **kwargs) -> str:
    """COMMAND's standard output (and error, for --version lines), or '' when it fails."""
    try:
        done = subprocess.run([str(part) for part in command], capture_output=True, text=True, **kwargs)
    except OSError:
        return ""
    return (done.stdout + done.stderr).strip() if done.returncode == 0 else ""


def succeeds(command, **kwargs) -> bool:
    """Whether COMMAND runs and exits 0 (its output discarded)."""
    try:
        return subprocess.run([str(part) for part in command], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, **kwargs).returncode == 0
    except OSError:
        return False


def first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""


def last_lines(path: Path, count: int) -> list:
    try:
        return Path(path).read_text(errors="replace").splitlines()[-count:]
    except OSError:
        return []


def git_commit(repo: Path = REPO) -> str:
    """The short commit of REPO's HEAD, or '' outside a git checkout."""
    return output_of(["git", "-C", repo, "rev-parse", "--short", "HEAD"])
