#!/usr/bin/env bash
# Every shell script of the repository passes shellcheck: each file git tracks whose
# first line runs bash or sh, or whose name ends in .sh or .bash. Sourced files are
# followed (-x), so a variable set in one file and read in another is understood.
#
# Not checked as they are:
#  - templates/mgpr.sbatch is shell only once mgpr-submit has filled its {{placeholders}};
#    given MGPR_SUBMIT, the script it renders (--dry-run) is checked instead.
#  - tests/fuzz/corpus/: inputs of the template fuzzer, fragments of that template with
#    their placeholders, some cut short on purpose; never run.
#
# Usage: shellcheck_check.sh REPO_ROOT [MGPR_SUBMIT]
# Exit 77 (skipped) when REPO_ROOT is not a git checkout: the scripts are those git tracks.
set -u
root=${1:?usage: shellcheck_check.sh REPO_ROOT [MGPR_SUBMIT]}
submit=${2:-}
cd "$root" || exit 2
root=$(pwd)
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "skipped: $root is not a git checkout, and the scripts checked are the files git tracks"
  exit 77
fi
if ! command -v shellcheck >/dev/null; then
  echo "FAIL: shellcheck is not installed (scripts/install-deps installs it)"
  exit 1
fi

shebang='^#!(/usr/bin/env[[:space:]]+|/bin/|/usr/bin/)(ba)?sh([[:space:]]|$)'
scripts=()
while IFS= read -r -d '' file; do
  case $file in
    templates/mgpr.sbatch | tests/fuzz/corpus/*) continue ;;
  esac
  [ -f "$file" ] || continue # removed in the work tree, not yet in the index
  case $file in
    *.sh | *.bash)
      scripts+=("$file")
      continue
      ;;
  esac
  first=""
  LC_ALL=C read -r -n 80 first <"$file" 2>/dev/null
  if [[ $first =~ $shebang ]]; then scripts+=("$file"); fi
done < <(git ls-files -z)

status=0
if [ ${#scripts[@]} = 0 ]; then
  echo "FAIL: no shell script found in $root: the selection above is broken"
  exit 1
fi
shellcheck -x --color=never "${scripts[@]}" || status=1

if [ -n "$submit" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  # A job script as mgpr-submit writes it: extra #SBATCH lines, fake data (no input file).
  if (cd "$work" && "$submit" --dry-run --template "$root/templates/mgpr.sbatch" --gpus a100:2 \
    --sbatch-arg=--reservation=lab use_fake_data=true >"$work/job.sbatch"); then
    if ! shellcheck --color=never "$work/job.sbatch"; then
      echo "FAIL: the job script mgpr-submit renders from templates/mgpr.sbatch (above, as job.sbatch)"
      status=1
    fi
  else
    echo "FAIL: $submit --dry-run could not render templates/mgpr.sbatch"
    status=1
  fi
  checked="${#scripts[@]} scripts and the rendered job template"
else
  checked="${#scripts[@]} scripts (the job template only with MGPR_SUBMIT)"
fi

if [ $status = 0 ]; then echo "ok: shellcheck finds nothing in $checked"; fi
exit $status
