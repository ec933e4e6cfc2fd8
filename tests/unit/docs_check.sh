#!/usr/bin/env bash
# The documentation that maps the code is checked against the code, so it cannot drift:
#  - every source file under runtime/<stage>/ is named in its stage's row of docs/runtime.md's
#    stage table (between the stage-table markers), and every file that table names exists;
#  - docs/architecture.md names every runtime stage, docs/contracts.md every header of
#    common/include/mgpr/;
#  - a repository path written as code in README.md or docs/*.md exists, and a relative link
#    leads to a file of the repository (and to a heading that exists there);
#  - README.md's figures are the current-figures block of docs/benchmarks.md, line for line,
#    and it quotes no speed-up outside that block; each speed-up the block quotes is a figure
#    of one of docs/benchmarks.md's entries;
#  - docs/benchmarks.md holds today's figures: every section with a table of figures says
#    when (its newest date, the newest of the history sections it links to), on which of
#    its machines and at which commits they were measured, and gives its command;
#    docs/benchmarks-history.md holds every measurement, newest first, each section's first
#    line its date, the commits measured and the one that recorded it; the commits named
#    exist, and the programs and scripts their commands run exist too, unless the section's
#    first line ends "Retired since: `NAME`, ..." naming them;
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
# What docs/benchmarks-history.md's sections declare gone, at the end of their first line
# ("... recorded in `abc1234`. Retired since: `bench/NAME`, `mgpr-NAME`."): their commands
# may still name it.
retired=$(awk '/^(Measured|Prepared) / { on = 1; p = "" } on && /^[ \t]*$/ { on = 0; if (i = index(p, "Retired since:")) print substr(p, i) }
  on { p = p " " $0 }' docs/benchmarks-history.md 2>/dev/null | grep -oE '`[^`]+`' | tr -d '`')
is_retired() { [ -n "$retired" ] && grep -qxF -- "$1" <<<"$retired"; }
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
    [ "$doc" = docs/benchmarks-history.md ] && is_retired "$word" && continue
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
    [ "$doc" = docs/benchmarks-history.md ] && is_retired "$word" && continue
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
# Every speed-up the block quotes (2.54×) is a figure of an entry of docs/benchmarks.md below it.
entries=$(awk '/<!-- current-figures:end -->/ { on = 1; next } on' docs/benchmarks.md)
for ratio in $(grep -oE '[0-9]+[.][0-9]+×' <<<"$bench_block" | tr -d '×' | sort -u); do
  grep -qE "(^|[^0-9.])${ratio//./[.]}([^0-9]|$)" <<<"$entries" ||
    fail "docs/benchmarks.md's current-figures block quotes ${ratio}×, which no entry below it measures"
done
outside=$(awk '/<!-- current-figures:begin -->/ { on = 1 } !on { print NR ": " $0 } /<!-- current-figures:end -->/ { on = 0 }' README.md |
  grep -E '[0-9]×' || true)
if [ -n "$outside" ]; then
  fail "README.md quotes speed-ups outside the current-figures block (they belong in docs/benchmarks.md's block):"
  echo "$outside"
fi

# --- docs/benchmarks.md's entries and docs/benchmarks-history.md ------------------------
history=docs/benchmarks-history.md
date_re='[0-9]{4}-[0-9]{2}-[0-9]{2}'
in_git=0
git rev-parse --git-dir >/dev/null 2>&1 && in_git=1
# A Markdown file's level-2 and level-3 sections outside fenced blocks, one line each:
# LINE<TAB>LEVEL<TAB>HEADING<TAB>FIRST PARAGRAPH<TAB>"Measured ..." PARAGRAPH<TAB>TABLE<TAB>FENCE,
# a paragraph's lines joined, TABLE and FENCE 1 when the section (up to the next heading)
# holds a table or a fenced block.
sections() {
  awk 'function endpara() {
         if (p != "") { n++; if (n == 1) first = p; if (meas == "" && p ~ /^(Measured|Prepared) /) meas = p }
         p = ""
       }
       function flush() { endpara(); if (h != "") print hl "\t" lvl "\t" h "\t" first "\t" meas "\t" table "\t" fen; h = "" }
       /^ *```/ { endpara(); if (!infence && h != "") fen = 1; infence = !infence; next }
       infence { next }
       /^#+ / { flush(); match($0, /^#+/); lvl = RLENGTH
                if (lvl == 2 || lvl == 3) { h = substr($0, lvl + 2); hl = NR; first = meas = ""; table = fen = n = 0 }
                next }
       /^[ \t]*$/ { endpara(); next }
       /^\|/ { table = 1 }
       { p = (p == "" ? $0 : p " " $0) }
       END { flush() }' "$1"
}
first_date() { grep -oE "$date_re" <<<"$1" | head -1; }
# The commits a paragraph names (`abc1234`) that the repository does not hold.
unknown_commits() {
  local c
  [ $in_git = 1 ] || return 0
  for c in $(grep -oE '`[0-9a-f]{7,40}`' <<<"$1" | tr -d '`'); do
    git cat-file -e "$c^{commit}" 2>/dev/null || echo "$c"
  done
}
declare -A history_date=() # a history heading's anchor -> the date of what it measured
if [ ! -f "$history" ]; then
  fail "$history is missing: docs/benchmarks.md's figures link to their write-ups there"
else
  mapfile -t heading_lines < <(prose "$history" | awk -F'\t' '$2 ~ /^#+ / { print $1 }')
  mapfile -t heading_anchors < <(anchors "$history")
  declare -A anchor_at=()
  for i in "${!heading_lines[@]}"; do anchor_at[${heading_lines[$i]}]=${heading_anchors[$i]:-}; done
  previous="" section_date=""
  while IFS=$'\t' read -r lineno level heading first _ _ _; do
    own=$(first_date "$heading")
    if [ "$level" = 2 ]; then
      section_date=""
      if [[ ! $first =~ ^(Measured|Prepared)\ ($date_re) ]] || [[ $first != *'recorded in `'* ]]; then
        fail "$history:$lineno: \"$heading\" does not open with its line \"Measured YYYY-MM-DD at \`COMMIT\`...; recorded in \`COMMIT\`.\""
        continue
      fi
      section_date=${BASH_REMATCH[2]}
      if [ -n "$own" ] && [ "$own" != "$section_date" ]; then
        fail "$history:$lineno: \"$heading\" is dated $own, its first line $section_date"
      fi
      if [ -n "$previous" ] && [[ $section_date > $previous ]]; then
        fail "$history:$lineno: \"$heading\" ($section_date) comes after a section of $previous: newest first"
      fi
      previous=$section_date
      for c in $(unknown_commits "$first"); do fail "$history:$lineno: \"$heading\" names commit $c, which the repository does not hold"; done
    fi
    history_date[${anchor_at[$lineno]:-?}]=${own:-$section_date}
  done < <(sections "$history")
fi
mapfile -t machines < <(awk '/^## Machines/ { on = 1; next } /^## / { on = 0 }
  on && /^- \*\*The [^*]*\*\*/ { sub(/^- \*\*The /, ""); sub(/\*\*.*/, ""); print }' docs/benchmarks.md)
[ ${#machines[@]} -gt 0 ] || fail "docs/benchmarks.md: its \"## Machines\" lists no \"- **The NAME**: ...\" machine"
while IFS=$'\t' read -r lineno _ heading _ measured table fence; do
  [ "$table" = 1 ] || continue
  where="docs/benchmarks.md:$lineno: \"$heading\""
  if [[ ! $measured =~ ^Measured\ ($date_re) ]]; then
    fail "$where has figures but no paragraph \"Measured YYYY-MM-DD on the MACHINE (CPU, flags) at \`COMMIT\` ([write-up](benchmarks-history.md#...))\""
    continue
  fi
  date=${BASH_REMATCH[1]}
  found=0
  for machine in "${machines[@]}"; do [[ $measured == *"on the $machine"* ]] && found=1; done
  [ $found = 1 ] || fail "$where: its Measured paragraph names none of the machines of \"## Machines\" (\"on the ${machines[0]}\", ...)"
  [ "$fence" = 1 ] || fail "$where: no command (a fenced block) for its figures"
  newest=""
  while IFS= read -r anchor; do
    linked=${history_date[$anchor]:-}
    [ -n "$linked" ] || continue # the link check above names a missing heading
    [[ $linked > $newest ]] && newest=$linked
  done < <(grep -oE 'benchmarks-history\.md#[^) ]+' <<<"$measured" | sed 's/^[^#]*#//')
  if [ -z "$newest" ]; then
    fail "$where: its Measured paragraph links to no section of $history"
  elif [ "$newest" != "$date" ]; then
    fail "$where: measured $date, but the newest write-up it links to is of $newest"
  fi
  for c in $(unknown_commits "$measured"); do fail "$where names commit $c, which the repository does not hold"; done
done < <(sections docs/benchmarks.md)
# The programs their commands run (mgpr-NAME, as a command or under bin/) are programs the
# build makes, in fenced blocks and in code spans alike, or the history says they are gone.
mapfile -t programs < <(find . -name CMakeLists.txt -not -path './build*' -not -path './out/*' -not -path './.*' -print0 |
  xargs -0 grep -ohE 'add_executable\(mgpr-[a-z0-9-]+' | sed 's/^add_executable(//' | sort -u)
for doc in docs/benchmarks.md "$history"; do
  [ -f "$doc" ] || continue
  while IFS=$'\t' read -r lineno program; do
    printf '%s\n' "${programs[@]}" | grep -qxF -- "$program" && continue
    if [ "$doc" = "$history" ]; then
      is_retired "$program" ||
        fail "$doc:$lineno runs $program, which no CMakeLists.txt builds (gone: \"Retired since: \`$program\`\" in its section's first line)"
    else
      fail "$doc:$lineno runs $program, which no CMakeLists.txt builds"
    fi
  done < <(awk '/^ *```/ { fence = !fence; next } {
      line = fence ? $0 : ""
      if (!fence) { rest = $0; while (match(rest, /`[^`]*`/)) { line = line " " substr(rest, RSTART + 1, RLENGTH - 2); rest = substr(rest, RSTART + RLENGTH) } }
      line = " " line
      while (match(line, /(^|[ \t;(]|bin\/)mgpr-[a-z0-9-]+/)) {
        word = substr(line, RSTART, RLENGTH); sub(/^.*mgpr-/, "mgpr-", word); print NR "\t" word
        line = substr(line, RSTART + RLENGTH) } }' "$doc")
done

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

[ $status = 0 ] && echo "ok: the runtime's ${#stages[@]} stages, common's headers, the docs' paths and links, the sources' comments, README's figures and the benchmarks' entries and history match the tree"
exit $status
