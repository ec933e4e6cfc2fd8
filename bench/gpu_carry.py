"""What scripts/build-for-gpu carries to the GPU machine, and whether it is fit to travel:
every binary's NEEDED libraries are ones the machine's PyTorch wheel provides (it ships
them, or its own libraries need them), and the whole fits what a call carries. The ELF
files are read here, not by readelf, which the GPU machine may lack.
"""
import struct
from pathlib import Path

CARRY_LIMIT_BYTES = 50 * 2**20
# The end-to-end carry travels alone in its call, which carries 64 MiB in all with the
# checkout: GDAL's libraries alone are about 44 MiB packed.
GDAL_CARRY_LIMIT_BYTES = 60 * 2**20
PROGRAMS = ("mgpr", "mgpr-bench-pipeline", "mgpr-bench-fake-device", "mgpr_gpu_tests", "mgpr_nccl_tests",
            "mgpr-comm-rank", "mgpr_crop_classifier_tests", "mgpr-bench-crops")
OPERATORS = "lib/libmgpr_torchvision_ops.so"
# The end-to-end carry (scripts/build-for-gpu --gdal): mgpr with GDAL, the tools that make
# the tests' rasters and models, the `mgpr` command's tests, the crop classifier's and the
# GPU pipeline's test programs, and the Debian libraries they need beyond the wheel,
# packed (CARRIED lists their names).
GDAL_PROGRAMS = ("mgpr", "mgpr-test-image", "mgpr-test-model", "mgpr_cli_tests", "mgpr_crop_classifier_tests",
                 "mgpr_gpu_tests")
LIBRARIES = "libraries.tar.xz"
CARRIED = "carried-libraries"


def carry_programs(carry: Path) -> tuple:
    """The programs CARRY holds: the end-to-end form's when it packs libraries."""
    return GDAL_PROGRAMS if (carry / LIBRARIES).is_file() else PROGRAMS


def elf_needed(path: Path) -> list:
    """The DT_NEEDED names of a 64-bit little-endian ELF file, from its section headers
    (readelf may be missing on the GPU machine)."""
    data = path.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path}: not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    needed = []
    for _name, kind, _flags, _addr, offset, size, link, _info, _align, entsize in sections:
        if kind != 6:  # SHT_DYNAMIC
            continue
        strtab_offset = sections[link][4]
        for at in range(offset, offset + size, entsize or 16):
            tag, value = struct.unpack_from("<qQ", data, at)
            if tag == 0:
                break
            if tag == 1:  # DT_NEEDED
                end = data.index(b"\0", strtab_offset + value)
                needed.append(data[strtab_offset + value:end].decode())
    return needed


def check_carry(carry: Path) -> list:
    """What is wrong with CARRY: a binary missing, a NEEDED library the wheel does not
    provide (wheel-libraries: what the wheel ships and what its own libraries need), the
    size over the limit. Empty when it is fit to travel."""
    problems = []
    listed = carry / "wheel-libraries"
    if not listed.is_file():
        return [f"{carry}: no wheel-libraries file: build the carry with scripts/build-for-gpu"]
    provided = set(listed.read_text().split())
    binaries = [carry / "bin" / name for name in carry_programs(carry)] + [carry / OPERATORS]
    carried = carry / CARRIED
    if (carry / LIBRARIES).is_file() and carried.is_file():
        provided |= set(carried.read_text().split())
    for binary in binaries:
        if not binary.is_file():
            problems.append(f"{binary.relative_to(carry)} is missing")
            continue
        foreign = [name for name in elf_needed(binary) if name not in provided]
        if foreign:
            problems.append(f"{binary.relative_to(carry)} needs {', '.join(foreign)}, which the wheel does not provide")
    limit_mib = (GDAL_CARRY_LIMIT_BYTES if (carry / LIBRARIES).is_file() else CARRY_LIMIT_BYTES) / 2**20
    if carry_size_mib(carry) > limit_mib:
        problems.append(f"{carry_size_mib(carry):.1f} MiB, over the {limit_mib:.0f} MiB a call carries")
    return problems


def carry_size_mib(carry: Path) -> float:
    """What CARRY sends: its files, not what its links (a rehearsal's) point to."""
    return sum(path.stat().st_size for path in carry.rglob("*") if path.is_file() and not path.is_symlink()) / 2**20
