#!/usr/bin/env bash
# The runtime's shape, checked: the composition stays small, the streaming stage alone
# carries results through the store's mail, every key of the run's store is spelled in
# its one table, and the vector writer names no format (each format is its row).
set -u
root=$1
status=0
fail() { echo "FAIL: $*"; status=1; }

# app/ composes the stages and holds none of them.
app_lines=$(cat "$root"/runtime/app/* | wc -l)
[ "$app_lines" -le 1000 ] ||
  fail "runtime/app/ has $app_lines lines (at most 1000): move what is a stage's own into that stage"

# Only runtime/stream/ includes the store's mail.
while IFS= read -r file; do
  fail "${file#"$root"/} includes stream/store_mail.hpp: only the streaming stage (runtime/stream/) carries mail"
done < <(grep -rl --include='*.cpp' --include='*.hpp' '#include "stream/store_mail.hpp"' "$root/runtime" |
           grep -v "^$root/runtime/stream/")

# Every store key comes from common/include/mgpr/store_keys.hpp: a literal that starts
# with a key's name, or with a first part of one followed by '/', is a key spelled
# outside the table (includes and comment lines aside).
table=$root/common/include/mgpr/store_keys.hpp
mapfile -t names < <(grep -o 'StoreKeyRow{StoreKey::k[A-Za-z0-9]*, "[^"]*"' "$table" | sed 's/.*, "//; s/"$//')
[ "${#names[@]}" -gt 10 ] || fail "read only ${#names[@]} key names from $table"
declare -A patterns=()
for name in "${names[@]}"; do
  patterns["\"$name\""]=1
  patterns["\"$name/"]=1
  case $name in */*) patterns["\"${name%%/*}/"]=1 ;; esac
done
for pattern in "${!patterns[@]}"; do
  while IFS= read -r hit; do
    fail "${hit#"$root"/}: a store key spelled outside $(basename "$table"); take it from the table (store_key)"
  done < <(grep -rnF --include='*.cpp' --include='*.hpp' -e "$pattern" "$root/runtime" "$root/common/src" \
             "$root/spank" "$root/launcher" 2>/dev/null | grep -vE '^[^:]*:[0-9]+:\s*(#include|//)')
done

# The vector writer takes every fact of a format from the format's row.
if grep -n 'OutputFormat' "$root/runtime/writers/vector_layer.cpp"; then
  fail "runtime/writers/vector_layer.cpp names OutputFormat: take the fact from the format's row instead"
fi

# A target's sources are compiled in batches (MGPR_UNITY_BUILD): there a free function of
# one source is seen by the sources after it, and one that takes the name of a function of
# common's (mgpr::) hides it from them, silently where the arguments fit both: a runtime
# split_list of NUL-separated values once split CUDA_VISIBLE_DEVICES so. Checked: no
# function defined at the start of a line in runtime/, the launcher, the plugin or the
# tools takes the name of one that common's headers declare.
defined_functions() {
  awk '/^(static |inline |constexpr |\[\[nodiscard\]\] )*[A-Za-z_][A-Za-z0-9_:<>,*& ]*[ *&]([a-z_][a-z0-9_]*)\(/ &&
       !/^(return|namespace|struct|class|enum|using|template|typedef) / {
         head = $0; sub(/\(.*/, "", head); n = split(head, words, /[ *&]+/); name = words[n]
         if (name !~ /::/) print name "\t" FILENAME ":" FNR }' "$@"
}
mapfile -t others < <(find "$root/runtime" "$root/launcher" "$root/spank" "$root/tools" -name '*.cpp' -o -name '*.hpp' | sort)
while IFS=$'\t' read -r name place; do
  fail "${place#"$root"/}: $name takes the name of common's mgpr::$name, which it hides from the sources batched after it; give it its own name"
done < <(defined_functions "${others[@]}" |
           awk -F'\t' 'NR == FNR { common[$1] = 1; next } ($1 in common)' \
             <(defined_functions "$root"/common/include/mgpr/*.hpp | cut -f1 | sort -u) -)

[ $status = 0 ] &&
  echo "ok: app/ is $app_lines lines, the mail is the streaming stage's, ${#names[@]} store keys each spelled once, formats are rows, no function hides one of common's"
exit $status
