#!/usr/bin/env bash
# No source file of the repository is over 400 lines: a file that grows past that holds
# more than one idea and is split along its seams (scripts/mgpr_export.py and its
# mgpr_card.py, mgpr_wrappers.py and mgpr_torchvision.py are an example). Checked: every
# file git tracks (so build folders and out/ are left alone) that is
#  - C++ or CUDA: .cpp, .hpp, .h, .cu, .cuh;
#  - Python: .py, or without an extension and a first line that runs python;
#  - shell: .sh or .bash, or without an extension and a first line that runs bash or sh.
# Each file over the limit fails here, named with its length.
#
# Usage: file_length_check.sh REPO_ROOT [MAX_LINES]   (MAX_LINES: 400)
# Exit 77 (skipped) when REPO_ROOT is not a git checkout: the files checked are those git tracks.
set -u
root=${1:?usage: file_length_check.sh REPO_ROOT [MAX_LINES]}
max=${2:-400}
cd "$root" || exit 2
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "skipped: $root is not a git checkout, and the files checked are the files git tracks"
  exit 77
fi

# The shebangs python_check.sh and shellcheck_check.sh recognise.
python_shebang='^#!(/usr/bin/env[[:space:]]+|/usr/bin/|/bin/)python[0-9.]*([[:space:]]|$)'
shell_shebang='^#!(/usr/bin/env[[:space:]]+|/bin/|/usr/bin/)(ba)?sh([[:space:]]|$)'
files=()
while IFS= read -r -d '' file; do
  if [ ! -f "$file" ] || [ -L "$file" ]; then continue; fi # removed in the work tree, or a link
  case ${file##*/} in
    *.cpp | *.hpp | *.h | *.cu | *.cuh | *.py | *.sh | *.bash)
      files+=("$file")
      continue
      ;;
    *.*) continue ;;
  esac
  first=""
  LC_ALL=C read -r -n 80 first <"$file" 2>/dev/null
  if [[ $first =~ $python_shebang || $first =~ $shell_shebang ]]; then files+=("$file"); fi
done < <(git ls-files -z)
if [ ${#files[@]} = 0 ]; then
  echo "FAIL: no source file found in $(pwd): the selection above is broken"
  exit 1
fi

status=0
for file in "${files[@]}"; do
  # Lines as an editor counts them: a last line without its newline counts too.
  lines=$(awk 'END { print NR }' "$file")
  if [ "$lines" -gt "$max" ]; then
    echo "FAIL: $file has $lines lines, over $max: split it by idea"
    status=1
  fi
done
[ $status = 0 ] && echo "ok: none of the ${#files[@]} C++, Python and shell files git tracks is over $max lines"
exit $status
