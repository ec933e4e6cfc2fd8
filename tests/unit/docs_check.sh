#!/usr/bin/env bash
# The documentation that maps the code is checked against the code, so it cannot drift:
#  - every source file under runtime/<stage>/ is named in its stage's row of docs/runtime.md's
#    stage table (between the stage-table markers), and every file that table names exists;
#  - docs/architecture.md names every runtime stage, docs/contracts.md every header of
#    common/include/mgpr/;
#  - a repository path written as code in README.md or docs/*.md exists, and a relative link
#    leads to a file of the repository (and to a heading that exists there);
#  - README.md's figures are the current-figures block of docs/benchmarks.md, line for line,
#    and it quotes no speed-up outside that block;
#  - nothing names a place outside the repository or the way the project was worked on: no
#    place on one machine (/tmp/, /home/, /root/, /work/, /Users/), no numbered issue of a
#    tracker the repository does not hold ("issue 35", "(#12)"), in prose or in code blocks,
#    nor an "issue 35" in the sources.
# Usage: docs_check.sh REPO_ROOT
# shellcheck disable=SC2016 # backquotes in single quotes are Markdown's, not the shell's
set -u
root=${1:?usage: docs_check.sh REPO_ROOT}
cd "$root" || exit 2
export LC_ALL=C.UTF-8
status=0
fail() { echo "FAIL: $*"; status=1; }

mapfile -t docs < <(printf '%s\n' README.md docs/*.md)
mapfile -t stages < <(find runtime -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort)
is_stage() { local s; for s in "${stages[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }

# A file's lines outside fenced code blocks, as "LINE<TAB>text".
prose() { awk '/^ *```/ { fence = !fence; next } !fence { print NR "\t" $0 }' "$1"; }
# The backquoted spans of a line, one a line.
spans() { grep -o '`[^`]*`' <<<"$1" | sed 's/^`//; s/`$//'; }
# The sources of a stage, relative to its folder (tiler.cpp, torchvision_ops/autocast_cpu.cpp).
stage_sources() {
  find "runtime/$1" -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) \
    -printf '%P\n' | sort
}

# --- docs/runtime.md's stage table ------------------------------------------------------
table=$(awk '/<!-- stage-table:begin -->/ { on = 1; next } /<!-- stage-table:end -->/ { on = 0 } on' docs/runtime.md)
if [ -z "$table" ]; then
  fail "docs/runtime.md has no stage table between <!-- stage-table:begin --> and <!-- stage-table:end -->"
fi
declare -A row_files=()
while IFS= read -r line; do
  stage=$(awk -F'|' '{ print $2 }' <<<"$line" | grep -o '`[a-z_0-9]*/`' | head -1 | tr -d '`/')
  [ -n "$stage" ] || continue
  row_files[$stage]=$(awk -F'|' '{ print $3 }' <<<"$line")
  if ! is_stage "$stage"; then fail "docs/runtime.md: the stage table has a row for runtime/$stage/, which does not exist"; fi
done <<<"$table"
for stage in "${stages[@]}"; do
  mapfile -t sources < <(stage_sources "$stage")
  [ ${#sources[@]} -gt 0 ] || continue
  if [ -z "${row_files[$stage]+set}" ]; then
    fail "docs/runtime.md: runtime/$stage/ has no row in the stage table"; continue
  fi
  mapfile -t named < <(spans "${row_files[$stage]}")
  for file in "${sources[@]}"; do
    found=0
    for name in "${named[@]}"; do
      if [ "$name" = "$file" ] || [ "$name" = "${file%.*}" ]; then found=1; break; fi
    done
    [ $found = 1 ] || fail "runtime/$stage/$file is missing from docs/runtime.md's stage table (row $stage/)"
  done
  for name in "${named[@]}"; do
    found=0
    for file in "${sources[@]}"; do
      if [ "$name" = "$file" ] || [ "$name" = "${file%.*}" ]; then found=1; break; fi
    done
    [ $found = 1 ] || fail "docs/runtime.md's stage table names runtime/$stage/$name, which does not exist"
  done
done

# --- docs/architecture.md and docs/contracts.md ----------------------------------------
for stage in "${stages[@]}"; do
  grep -qE "\`$stage\`|runtime/$stage/" docs/architecture.md ||
    fail "runtime/$stage/ is missing from docs/architecture.md"
done
for header in common/include/mgpr/*.hpp; do
  grep -q "\`mgpr/${header##*/}\`" docs/contracts.md ||
    fail "$header is missing from docs/contracts.md's table of contracts"
done

# --- paths and links --------------------------------------------------------------------
mapfile -t topdirs < <(find . -mindepth 1 -maxdepth 1 -type d ! -name '.*' ! -name 'build*' ! -name out -printf '%f\n')
is_topdir() { local d; for d in "${topdirs[@]}"; do [ "$d" = "$1" ] && return 0; done; return 1; }
inside_root() { case "$(realpath -m "$1")" in "$(pwd -P)" | "$(pwd -P)"/*) return 0 ;; esac; return 1; }

# GitHub's anchor for each heading of a Markdown file (duplicates get -1, -2, ...).
anchors() {
  prose "$1" | cut -f2- | sed -n 's/^#\{1,6\} \{1,\}//p' |
    sed 's/`//g; s/\[\([^]]*\)\]([^)]*)/\1/g' | tr '[:upper:]' '[:lower:]' |
    sed 's/[^[:alnum:] _-]//g; s/ /-/g' |
    awk '{ n = seen[$0]++; print (n ? $0 "-" n : $0) }'
}

declare -A anchor_cache=()
for doc in "${docs[@]}"; do
  dir=$(dirname "$doc")
  # Paths written as code: "LINE<TAB>first word of the span".
  while IFS=$'\t' read -r lineno word; do
    word=${word%%#*}
    while [[ $word =~ [.,\;:\)]$ ]]; do word=${word%?}; done
    [[ $word =~ ^(.*):[0-9]+$ ]] && word=${BASH_REMATCH[1]}
    case "$word" in *'<'* | *'>'* | *'*'* | *'$'* | *'{'* | *'…'* | *...* | *=* | '') continue ;; esac
    top=${word%%/*}
    if [ "$top" != "$word" ] && is_topdir "$top"; then
      [ -e "$word" ] || fail "$doc:$lineno names $word, which does not exist"
    elif [[ $word =~ ^mgpr/[a-z_0-9]+\.hpp$ ]]; then
      [ -e "common/include/$word" ] || fail "$doc:$lineno names $word, which is not in common/include/"
    elif [[ $word =~ ^[a-z_0-9]+/.+\.(cpp|hpp|cu)$ ]] && is_stage "$top"; then
      [ -e "runtime/$word" ] || fail "$doc:$lineno names $word, which is not in runtime/"
    fi
  done < <(prose "$doc" | awk -F'\t' '{
      n = split($2, part, "`"); for (i = 2; i < n; i += 2) { split(part[i], w, " "); print $1 "\t" w[1] } }')
  # Paths in commands of fenced code blocks: "LINE<TAB>word made of path characters".
  while IFS=$'\t' read -r lineno word; do
    word=${word%.}
    top=${word%%/*}
    if [ "$top" != "$word" ] && is_topdir "$top" && [ ! -e "$word" ]; then
      fail "$doc:$lineno (a command) names $word, which does not exist"
    fi
  done < <(awk '/^ *```/ { fence = !fence; next } fence {
      line = $0; while (match(line, /[A-Za-z0-9_.\/-]+/)) {
        word = substr(line, RSTART, RLENGTH); line = substr(line, RSTART + RLENGTH)
        if (word ~ /\// && substr(line, 1, 1) !~ /[<*$]/) print NR "\t" word } }' "$doc")
  # Relative links and images: "LINE<TAB>target".
  while IFS=$'\t' read -r lineno target; do
    case "$target" in http://* | https://* | mailto:*) continue ;; esac
    path=${target%%#*}
    anchor=${target#"$path"}
    anchor=${anchor#\#}
    file=$doc
    if [ -n "$path" ]; then
      file=$(realpath -m --relative-to=. "$dir/$path")
      if ! inside_root "$file"; then fail "$doc:$lineno links to $target, outside the repository"; continue; fi
      if [ ! -e "$file" ]; then fail "$doc:$lineno links to $target, which does not exist"; continue; fi
    fi
    if [ -n "$anchor" ] && [[ $file == *.md ]]; then
      [ -n "${anchor_cache[$file]+set}" ] || anchor_cache[$file]=$(anchors "$file")
      grep -qxF -- "$anchor" <<<"${anchor_cache[$file]}" || fail "$doc:$lineno links to $target: $file has no such heading"
    fi
  done < <(prose "$doc" | awk -F'\t' '{
      line = $2; while (match(line, /\]\([^) ]+\)/)) {
        print $1 "\t" substr(line, RSTART + 2, RLENGTH - 3); line = substr(line, RSTART + RLENGTH) } }')
done

# --- README's figures: docs/benchmarks.md's current-figures block ------------------------
block() { awk '/<!-- current-figures:begin -->/ { on = 1 } on { print } /<!-- current-figures:end -->/ { on = 0 }' "$1"; }
bench_block=$(block docs/benchmarks.md)
if [ "$(grep -c '<!-- current-figures:begin -->' docs/benchmarks.md)" != 1 ] ||
   [ "$(grep -c '<!-- current-figures:end -->' docs/benchmarks.md)" != 1 ]; then
  fail "docs/benchmarks.md needs one <!-- current-figures:begin --> ... <!-- current-figures:end --> block"
fi
if grep -q '<!-- current-figures:begin -->' README.md; then
  if [ "$(block README.md)" != "$bench_block" ]; then
    fail "README.md's current-figures block differs from docs/benchmarks.md's (copy it over):"
    diff <(block docs/benchmarks.md) <(block README.md) | head -20
  fi
fi
outside=$(awk '/<!-- current-figures:begin -->/ { on = 1 } !on { print NR ": " $0 } /<!-- current-figures:end -->/ { on = 0 }' README.md |
  grep -E '[0-9]×' || true)
if [ -n "$outside" ]; then
  fail "README.md quotes speed-ups outside the current-figures block (they belong in docs/benchmarks.md's block):"
  echo "$outside"
fi

# --- nothing outside the repository, nothing about how it was worked on -------------------
words=$(grep -n -iE 'device tool|this session|sessions so far|\.\./shared|working period|/work/' "${docs[@]}" || true)
if [ -n "$words" ]; then
  fail "the docs name a place outside the repository or how the project was worked on:"
  echo "$words"
fi
# Places on one machine (/work/ is the words check's, above) and numbered issues of a
# tracker outside the repository, in prose and in fenced blocks alike: "LINE<TAB>place|tracker<TAB>what". Left alone: URLs and links,
# another project's issues ("TorchGeo's issue #1991", "TorchGeo's stitching issues (#30,
# #1991)", "owner/repo#12"), anchors ("(#2026-11-26)" is a heading's), "#include", "# text",
# "$#", and gdb's frames ("#0  0x...") in fenced blocks.
outside_refs() {
  awk -v apos="('|$(printf '\342\200\231'))" '
    BEGIN {
      place = "(^|[^A-Za-z0-9_.~$}/-]|//|[.][.])/(tmp|home|root|Users)/"
      other = "[A-Za-z][A-Za-z0-9_.-]*" apos "s ([a-z-]+ )?(issue|issues|bug|bugs|pull request|pull requests|PR|PRs) [(]?#?[0-9]+((, | and | or )#?[0-9]+)*[)]?"
      tracker = "(^|[^A-Za-z])[Ii]ssues? #?[0-9]+|(^|[^&$A-Za-z0-9_/#-])#[0-9]+([^A-Za-z0-9_-]|$)"
    }
    /^ *```/ { fence = !fence; next }
    {
      line = $0
      if (match(line, place)) {
        m = substr(line, RSTART); match(m, "/(tmp|home|root|Users)/"); m = substr(m, RSTART)
        sub(/[ \t`"'"'"'),;>].*/, "", m); print NR "\tplace\t" m
      }
      gsub(/[A-Za-z][A-Za-z0-9+.-]*:\/\/[^ \t)>`]*/, "", line)
      gsub(/\]\(#[^)]*\)/, "]", line)
      gsub(/[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+#[0-9]+/, "", line)
      if (fence) sub(/^ *#[0-9]+ +(0x|in ).*/, "", line)
      out = ""
      while (match(line, other)) {
        m = substr(line, RSTART, RLENGTH); owner = tolower(m); sub(apos "s .*", "", owner)
        out = out substr(line, 1, RSTART - 1) (owner ~ /^(mgpr|project)$/ ? m : "")
        line = substr(line, RSTART + RLENGTH)
      }
      line = out line
      if (match(line, tracker)) {
        m = substr(line, RSTART, RLENGTH); sub(/^[^A-Za-z#]/, "", m); sub(/[^0-9]$/, "", m)
        print NR "\ttracker\t" m
      }
    }' "$1"
}
for doc in "${docs[@]}"; do
  while IFS=$'\t' read -r lineno kind what; do
    if [ "$kind" = place ]; then
      fail "$doc:$lineno names $what, a place on one machine: write a path inside the repository's out/ folder or a placeholder (\$OUT, DIR)"
    else
      fail "$doc:$lineno refers to \"$what\" of a tracker the repository does not hold: say what it meant without the number (\"The goal: ...\", \"the matrix of every model and tile\")"
    fi
  done < <(outside_refs "$doc")
done

# The same numbered issues in the sources (comments, test names, messages): the code speaks
# of the project alone. Another project's issue ("TorchGeo's issue #1991") is left alone.
mapfile -t sources < <(find common launcher spank runtime tools tests bench scripts templates packaging cmake \
  -path tests/fuzz/corpus -prune -o -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.cu' \
  -o -name '*.py' -o -name '*.sh' -o -name '*.in' -o -name CMakeLists.txt -o -name '*.cmake' \) -print 2>/dev/null |
  grep -v -x tests/unit/docs_check.sh | sort)
while IFS= read -r hit; do
  fail "${hit%%: *}: refers to a numbered issue of a tracker the repository does not hold: say what it meant without the number"
done < <(grep -n -H -E "(^|[^A-Za-z])[Ii]ssues? #?[0-9]+" "${sources[@]}" CMakeLists.txt |
  grep -v -E "[A-Za-z]'s ([a-z-]+ )?[Ii]ssues? #?[0-9]+" | cut -d: -f1,2)

[ $status = 0 ] && echo "ok: the runtime's ${#stages[@]} stages, common's headers, the docs' paths and links, the sources' comments, and README's figures match the tree"
exit $status
