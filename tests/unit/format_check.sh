#!/usr/bin/env bash
# Every C++ file of the repository is as clang-format lays it out (.clang-format): a
# change that is not fails here, naming the files; `clang-format -i FILE` formats one.
# clang-format 14 is Debian 12's (scripts/install-deps); another version may lay out
# some lines differently, so the versioned binary is preferred where it is installed.
set -u
root=$1
formatter=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$formatter" ]; then
  echo "FAIL: clang-format is not installed; scripts/install-deps installs it"
  exit 1
fi
if ! git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "FAIL: $root is not a git checkout: the check formats the files git tracks"
  exit 1
fi
status=0
checked=0
while IFS= read -r -d '' file; do
  checked=$((checked + 1))
  if ! "$formatter" --style=file --dry-run --Werror "$root/$file" >/dev/null 2>&1; then
    echo "FAIL: $file is not formatted: $formatter -i $file"
    status=1
  fi
done < <(git -C "$root" ls-files -z -- '*.cpp' '*.hpp' '*.h' '*.cu' '*.cuh')
[ $status = 0 ] && echo "ok: $checked C++ files as clang-format ($("$formatter" --version | head -1)) lays them out"
exit $status
