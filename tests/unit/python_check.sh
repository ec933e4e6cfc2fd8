#!/usr/bin/env bash
# Every Python file of the repository passes Ruff's linter (rules and line length:
# ruff.toml): each file git tracks whose name ends in .py or whose first line runs
# python. A finding fails here, naming the files; `ruff check --fix FILE` fixes the
# mechanical ones (unused imports, import order).
#
# The executables without .py (bench/gpu-check, bench/run-cpu-benchmarks, ...) must also
# be listed in ruff.toml's extend-include, so that a plain `ruff check .` sees them too:
# one that is not fails here, by name.
#
# Ruff is the version pinned by hash in scripts/ruff.requirements, which scripts/fetch-ruff
# (run by scripts/install-deps) unpacks into out/ruff/ruff-VERSION/ruff; MGPR_RUFF names
# another binary of that version. Nothing is downloaded here.
#
# Why no `ruff format --check`: ruff.toml says.
#
# Usage: python_check.sh REPO_ROOT
# Exit 77 (skipped) when REPO_ROOT is not a git checkout: the files checked are those git tracks.
set -u
root=${1:?usage: python_check.sh REPO_ROOT}
cd "$root" || exit 2
root=$(pwd)
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "skipped: $root is not a git checkout, and the files checked are the files git tracks"
  exit 77
fi

version=$(sed -n 's/^ruff==\([0-9.]*\) .*/\1/p' scripts/ruff.requirements)
if [ -z "$version" ]; then
  echo "FAIL: scripts/ruff.requirements pins no ruff==VERSION"
  exit 1
fi
ruff=${MGPR_RUFF:-$root/out/ruff/ruff-$version/ruff}
if [ ! -x "$ruff" ]; then
  echo "FAIL: Ruff $version is not installed at $ruff; scripts/fetch-ruff installs it there" \
    "(scripts/install-deps runs it), or set MGPR_RUFF to a ruff $version binary"
  exit 1
fi
have=$("$ruff" --version 2>&1)
if [ "$have" != "ruff $version" ]; then
  echo "FAIL: $ruff is '$have', not ruff $version (scripts/ruff.requirements); scripts/fetch-ruff installs that"
  exit 1
fi

shebang='^#!(/usr/bin/env[[:space:]]+|/usr/bin/|/bin/)python[0-9.]*([[:space:]]|$)'
files=()
executables=()
while IFS= read -r -d '' file; do
  [ -f "$file" ] || continue # removed in the work tree, not yet in the index
  case $file in
    *.py)
      files+=("$file")
      continue
      ;;
  esac
  first=""
  LC_ALL=C read -r -n 80 first <"$file" 2>/dev/null
  if [[ $first =~ $shebang ]]; then
    files+=("$file")
    executables+=("$file")
  fi
done < <(git ls-files -z)
if [ ${#files[@]} = 0 ]; then
  echo "FAIL: no Python file found in $root: the selection above is broken"
  exit 1
fi

status=0
# What `ruff check .` lints, to find the executables ruff.toml does not name.
seen=$("$ruff" check --show-files . 2>&1)
for file in "${executables[@]}"; do
  if ! grep -qxF "$root/$file" <<<"$seen"; then
    echo "FAIL: $file runs python but ruff.toml's extend-include does not name it: add \"$file\" there"
    status=1
  fi
done

# The files are named explicitly, so that the check does not depend on extend-include.
if ! output=$("$ruff" check --no-cache --output-format concise -- "${files[@]}" 2>&1); then
  echo "$output"
  failing=$(sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: .*/\1/p' <<<"$output" | sort -u)
  if [ -n "$failing" ]; then
    echo "FAIL: Ruff finds problems in: $(tr '\n' ' ' <<<"$failing")(ruff.toml; \`$ruff check --fix FILE\` fixes some)"
  else
    echo "FAIL: Ruff did not run cleanly (above)"
  fi
  status=1
fi

if [ $status = 0 ]; then
  echo "ok: Ruff $version finds nothing in ${#files[@]} Python files (${#executables[@]} of them executables without .py)"
fi
exit $status
