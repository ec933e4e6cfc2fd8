"""bench/gpu-check's plan: the calls to the GPU machine, their steps and time limits, the
carry each call takes, and whether the whole fits what one task is lent.

A task is lent 15 minutes of device time in all, the machine's start (a minute or more),
its idle waits and the transfers included; a call carries 64 MiB with the checkout. So
the plan holds at most two calls whose steps' limits add up to 11 minutes at most, each
with one carry of 60 MiB at most, and call 1 alone makes the headline table.
"""
import subprocess
import sys
from collections import namedtuple
from pathlib import Path

from gpu_carry import carry_size_mib, check_carry

MAX_CALLS = 2
STEP_LIMITS_S = 660  # every call's steps together
CARRY_LIMIT_MIB = 60
CALL_SENDS_MIB = 64  # what one call carries, the checkout and the carry together

Step = namedtuple("Step", "name limit_s what")
Call = namedtuple("Call", "number carry purpose steps")

CALLS = (
    Call(1, ".gpu-carry", "the headline table, then the card's test programs", (
        Step("versions", 20, "the card, driver, torch, torchvision, Lightning; every carried binary loads"),
        Step("models", 60, "ResNet-50, RetinaNet, Faster R-CNN and DeepForest's RetinaNet exported as TorchScript"),
        Step("defaults", 70, "`mgpr` on ResNet-50 1024², raw 8-bit tiles: config.hpp's defaults (batch 4, 2 "
                             "readers, precision=auto) against bf16, batch 16 with 8 readers, and both: loop "
                             "tiles/s and busy (nvidia-smi's utilization.gpu over the loop)"),
        Step("boxes", 150, "RetinaNet, Faster R-CNN, DeepForest: mgpr fp32, auto, bf16 and fp16 against mgpr fp32 "
                           "and torchvision eager fp32 on the same card, 128 tiles, IoU >= 0.9, same label"),
        Step("lightning", 90, "ResNet-50 1024² bf16: mgpr against Lightning's Trainer.predict, both fed float32 "
                              "tiles, then both fed 8-bit tiles"),
        Step("gpu-tests", 60, "the GPU, NCCL and crop classifier test programs, 20 s a test"),
        Step("refusal", 10, "CUDA_VISIBLE_DEVICES=0,0 mgpr gpus=2: refused with exit 2 within seconds"),
        Step("crops", 40, "task=detect's crop classifier: ResNet-50 224² crops/s, bf16, batches of 128, end to end "
                          "against the classifier alone"),
    )),
    Call(2, ".gpu-carry-gdal", "`mgpr` on GeoTIFFs: its suites and a detect run with its crop classifier", (
        Step("versions", 15, "the card and versions; the end-to-end carry's libraries unpacked, every binary loads"),
        Step("gdal-tests", 60, "`mgpr` on GeoTIFFs the tests write: the crop classifier's suite on the GPU"),
        Step("detect-classify", 85, "DeepForest's RetinaNet on an 8000² GeoTIFF, alone and with a ResNet-50 crop "
                                    "classifier (classify_model=), bf16"),
    )),
)


def end_to_end(call: Call) -> bool:
    """Whether CALL takes the carry with GDAL (scripts/build-for-gpu --gdal)."""
    return call.carry == ".gpu-carry-gdal"


def call_budget_s(call: Call) -> int:
    """What `--run --call N` is given: its steps' limits together."""
    return sum(step.limit_s for step in call.steps)


def call_command(call: Call) -> str:
    return f'bench/gpu-check --run --call {call.number} --out "$OUT"'


def checkout_size_mib(root: Path) -> float:
    """What a call sends besides the carry: the files git tracks and those it does not
    ignore. 0 outside a git checkout."""
    try:
        listing = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others",
                                  "--exclude-standard"], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return 0.0
    names = {name for name in listing.decode(errors="replace").split("\0") if name}
    return sum((root / name).stat().st_size for name in names if (root / name).is_file()) / 2**20


def plan_problems(calls, root: Path, known_steps) -> list:
    """Why the plan does not fit one task: too many calls, limits over STEP_LIMITS_S, a
    step no method runs, a carry that is built and unfit or too big to travel. Empty
    when it fits."""
    problems = []
    if len(calls) > MAX_CALLS:
        problems.append(f"{len(calls)} calls, more than {MAX_CALLS}")
    total = sum(call_budget_s(call) for call in calls)
    if total > STEP_LIMITS_S:
        problems.append(f"the steps' limits add up to {total} s, over {STEP_LIMITS_S} s")
    checkout = checkout_size_mib(root)
    for call in calls:
        for step in call.steps:
            if step.name not in known_steps:
                problems.append(f"call {call.number}: no step named {step.name}")
        carry = root / call.carry
        if not carry.is_dir():
            continue
        problems += [f"call {call.number}: {call.carry}: {problem}" for problem in check_carry(carry)]
        size = carry_size_mib(carry)
        if size > CARRY_LIMIT_MIB:
            problems.append(f"call {call.number}: {call.carry} is {size:.1f} MiB, over {CARRY_LIMIT_MIB} MiB")
        elif size + checkout > CALL_SENDS_MIB:
            problems.append(f"call {call.number}: {call.carry} ({size:.1f} MiB) and the checkout "
                            f"({checkout:.1f} MiB) are over the {CALL_SENDS_MIB} MiB a call sends")
    return problems


def print_plan(calls, root: Path, known_steps) -> int:
    """Each call's steps, limits, carry and command; 1 when the plan does not fit."""
    checkout = checkout_size_mib(root)
    for call in calls:
        carry = root / call.carry
        built = f"{carry_size_mib(carry):.1f} MiB" if carry.is_dir() else "not built here"
        print(f"call {call.number}: {call.purpose}")
        print(f"  carry {call.carry} ({built}; scripts/build-for-gpu{' --gdal' if 'gdal' in call.carry else ''})")
        print(f"  command: {call_command(call)}   (run's carry: {call.carry}; timeout_s "
              f"{call_budget_s(call) + 30})")
        for step in call.steps:
            print(f"  {step.name:<16} {step.limit_s:>4} s  {step.what}")
        print(f"  limits together: {call_budget_s(call)} s")
    total = sum(call_budget_s(call) for call in calls)
    print(f"{len(calls)} calls, {total} s of limits together (at most {MAX_CALLS} calls and {STEP_LIMITS_S} s); "
          f"each carry at most {CARRY_LIMIT_MIB} MiB, and with the checkout ({checkout:.1f} MiB) at most "
          f"{CALL_SENDS_MIB} MiB a call")
    problems = plan_problems(calls, root, known_steps)
    for problem in problems:
        print(f"gpu-check: the plan does not fit: {problem}", file=sys.stderr)
    return 1 if problems else 0
