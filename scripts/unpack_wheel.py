#!/usr/bin/env python3
"""Unpacks a wheel, or a source tarball pinned beside one, into a folder.

  unpack_wheel.py ARCHIVE DEST [--keep REGEX ...] [--strip-components N]

ARCHIVE is a wheel (a zip file) or a tar file (.tar.gz, .tar.xz, ...). Only the members
whose name one --keep REGEX matches from its start are unpacked (all without --keep);
--strip-components N drops the first N folders of every member's path, as tar's option
does. Only regular files are unpacked, and none outside DEST. scripts/fetch-libtorch
and scripts/build-torch2 take LibTorch and the libraries beside it from PyTorch's
wheels with this.

Plain Python 3, no packages.
"""
import argparse
import re
import shutil
import sys
import tarfile
import zipfile
from pathlib import Path, PurePosixPath


def target(dest: Path, name: str, strip: int):
    """Where member NAME goes under DEST, or None when nothing of it is left after
    stripping. Refuses a name that would leave DEST."""
    parts = PurePosixPath(name).parts[strip:]
    if not parts:
        return None
    if PurePosixPath(name).is_absolute() or ".." in parts:
        raise ValueError(f"{name}: a member outside the folder it is unpacked into")
    return dest.joinpath(*parts)


def members(archive: Path):
    """(name, opener) for every regular file of ARCHIVE, in the archive's order."""
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as wheel:
            for info in wheel.infolist():
                if not info.is_dir():
                    yield info.filename, lambda info=info: wheel.open(info)
    else:
        with tarfile.open(archive) as tar:
            for info in tar:
                if info.isfile():
                    yield info.name, lambda info=info: tar.extractfile(info)


def unpack(archive: Path, dest: Path, keep=(), strip: int = 0) -> int:
    """Unpacks ARCHIVE's members that a pattern of KEEP matches (all when KEEP is empty)
    into DEST; returns how many."""
    patterns = [re.compile(pattern) for pattern in keep]
    count = 0
    for name, open_member in members(archive):
        if patterns and not any(pattern.match(name) for pattern in patterns):
            continue
        path = target(dest, name, strip)
        if path is None:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        with open_member() as source, open(path, "wb") as output:
            shutil.copyfileobj(source, output)
        count += 1
    return count


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("archive", type=Path)
    parser.add_argument("dest", type=Path)
    parser.add_argument("--keep", action="append", default=[], metavar="REGEX",
                        help="unpack the members this matches from the start of their name (repeatable)")
    parser.add_argument("--strip-components", type=int, default=0, metavar="N",
                        help="drop the first N folders of each member's path")
    arguments = parser.parse_args(argv)
    try:
        count = unpack(arguments.archive, arguments.dest, arguments.keep, arguments.strip_components)
    except (OSError, ValueError, zipfile.BadZipFile, tarfile.TarError) as error:
        print(f"unpack_wheel.py: {arguments.archive}: {error}", file=sys.stderr)
        return 1
    if count == 0:
        print(f"unpack_wheel.py: nothing in {arguments.archive} matches {' or '.join(arguments.keep)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
