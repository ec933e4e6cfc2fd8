#!/usr/bin/env bash
# The relocatable bundle (scripts/bundle) as a site meets it: made from this build,
# unpacked into a new prefix, its run paths all $ORIGIN-relative (none into the build,
# the repository or out/), its libraries resolved inside it or from the system,
# `mgpr --version` and a small mgpr run with no LD_LIBRARY_PATH, again after the prefix
# is moved, and the bundle's mgpr-submit running the bundle's mgpr as a job on a local
# Slurm cluster.
#
#   bundle_test.sh BUILD_DIR REPO_ROOT LOCAL_SLURM WORK_DIR
set -u
build=$1 root=$2 local_slurm=$3 work=$4
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
skip() { echo "skipped: $*"; exit 77; }
command -v patchelf >/dev/null || skip "scripts/bundle needs patchelf (scripts/install-deps installs it)"
# The system's programs only, no LD_LIBRARY_PATH: as on a node that never saw the build.
clean_env=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$work" LANG=C.UTF-8)

cluster=$work/c
# shellcheck disable=SC2317  # run by the EXIT trap, which shellcheck does not follow
cleanup() { "$local_slurm" stop "$cluster" >/dev/null 2>&1; }
trap cleanup EXIT
cleanup
rm -rf "$work" && mkdir -p "$work/run" "$work/demo"

echo "== scripts/bundle refuses bad input, naming it"
"$root/scripts/bundle" "$work/no-such-build" "$work/x.tar.gz" >"$work/bad.log" 2>&1 &&
  fail "scripts/bundle accepted a missing build folder"
grep -q "$work/no-such-build: no such build folder" "$work/bad.log" || fail "unclear error for a missing build folder: $(cat "$work/bad.log")"
"$root/scripts/bundle" "$build" "$work/x.zip" >"$work/bad.log" 2>&1 && fail "scripts/bundle accepted x.zip"
grep -q "x.zip: the output must end in .tar.gz" "$work/bad.log" || fail "unclear error for x.zip: $(cat "$work/bad.log")"

echo "== scripts/bundle"
start=$SECONDS
"$root/scripts/bundle" "$build" "$work/mgpr-ctest.tar.gz" || { fail "scripts/bundle"; exit 1; }
echo "(made in $((SECONDS - start)) s, $(du -h "$work/mgpr-ctest.tar.gz" | cut -f1))"
ls "$work"/*.partial* >/dev/null 2>&1 && fail "a partial tarball is left beside the bundle"

echo "== unpacked into a new prefix"
prefix=$work/prefix/sw
mkdir -p "$prefix"
tar -xzf "$work/mgpr-ctest.tar.gz" -C "$prefix" || { fail "tar -x"; exit 1; }
bundle=$prefix/mgpr-ctest
for file in bin/mgpr bin/mgpr-test-image bin/mgpr-submit bin/mgpr-logs share/mgpr/templates/mgpr.sbatch \
            lib/libtorch_cpu.so lib/libc10.so README MANIFEST; do
  [ -e "$bundle/$file" ] || fail "the bundle lacks $file"
done
[ -e "$bundle/lib/slurm/mgpr.so" ] && fail "the bundle carries the SPANK plugin, which belongs to the cluster's Slurm"
cat "$bundle/MANIFEST"
grep -q "^LibTorch: [0-9.]*, \(CPU only\|CUDA\)" "$bundle/MANIFEST" || fail "MANIFEST does not name LibTorch's version and CPU or CUDA"
grep -q "^host packages (Debian 12.*libgdal" "$bundle/MANIFEST" || fail "MANIFEST does not name GDAL's Debian package"

echo "== run paths"
while IFS= read -r -d '' file; do
  [ "$(head -c 4 "$file" | tr -d '\0')" = $'\x7fELF' ] || continue
  paths=$(readelf -d "$file" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p')
  case ${file#"$bundle"/} in
    bin/*) [ "$paths" = "\$ORIGIN/../lib" ] || fail "${file#"$bundle"/}: run path '$paths', not \$ORIGIN/../lib" ;;
    lib/*) [ -z "$paths" ] || [ "$paths" = "\$ORIGIN" ] || fail "${file#"$bundle"/}: run path '$paths', not \$ORIGIN" ;;
  esac
  for entry in $(tr ':' ' ' <<<"$paths"); do
    case $entry in
      *"$build"* | *"$root"* | */out/*) fail "${file#"$bundle"/}: run path $entry points into the build machine's folders" ;;
    esac
  done
done < <(find "$bundle" -type f -print0)
echo "== libraries, with no LD_LIBRARY_PATH"
"${clean_env[@]}" ldd "$bundle/bin/mgpr" >"$work/ldd.log" 2>&1 || fail "ldd bin/mgpr"
grep -q "libtorch_cpu.so => $bundle/bin/../lib/libtorch_cpu.so" "$work/ldd.log" ||
  fail "bin/mgpr does not take LibTorch from the bundle: $(grep libtorch_cpu "$work/ldd.log")"
grep -E "not found|$root/|$build/" "$work/ldd.log" && fail "a library of bin/mgpr is missing or taken from the build machine's folders"

echo "== mgpr --version and a small run"
version=$("${clean_env[@]}" "$bundle/bin/mgpr" --version) || fail "bin/mgpr --version"
echo "$version"
[[ $version == "mgpr "*" (LibTorch "* ]] || fail "bin/mgpr --version printed '$version'"
cd "$work/run" || exit 1
"${clean_env[@]}" "$bundle/bin/mgpr-test-image" --size 1024 small.tif >/dev/null || fail "bin/mgpr-test-image"
"${clean_env[@]}" "$bundle/bin/mgpr" small.tif tile_size=512 batch_size=2 >"$work/run.log" 2>&1 ||
  { cat "$work/run.log"; fail "bin/mgpr small.tif"; }
[ "$(wc -l <mgpr_output/small_tiles.csv 2>/dev/null)" = 5 ] || fail "the small run's small_tiles.csv does not list its 4 tiles"
mv "$work/prefix" "$work/moved"
bundle=$work/moved/sw/mgpr-ctest
"${clean_env[@]}" "$bundle/bin/mgpr" --version >/dev/null || fail "bin/mgpr --version after the prefix moved"

echo "== a job on the local cluster with the bundle's mgpr-submit"
if [ "$(id -u)" != 0 ]; then
  [ $failures = 0 ] || exit 1
  skip "the bundle passed its checks; the local cluster needs root for its job"
fi
plugin=()
[ -f "$build/spank/mgpr.so" ] && plugin=(--plugin "$build/spank/mgpr.so")
"$local_slurm" start "$cluster" "${plugin[@]}" || { fail "cluster start"; exit 1; }
cd "$work/demo" || exit 1
"${clean_env[@]}" "$bundle/bin/mgpr-test-image" --size 1024 demo.tif >/dev/null || fail "mgpr-test-image"
"${clean_env[@]}" SLURM_CONF="$cluster/etc/slurm.conf" "$bundle/bin/mgpr-submit" --gpus a100:2 --wait demo.tif \
  tile_size=512 batch_size=2 >"$work/submit.log" 2>&1 || { cat "$work/submit.log"; fail "the job"; }
cat "$work/submit.log"
job_id=$(head -n 1 "$work/submit.log" | sed -n 's/^mgpr-submit: submitted job \([0-9]*\)$/\1/p')
[ -n "$job_id" ] || fail "no job id in mgpr-submit's output"
grep -q "^srun .* '\?$bundle/bin/mgpr'\? " "slurm_logs/$job_id/job.sbatch" ||
  fail "the job did not run the bundle's mgpr: $(grep '^srun' "slurm_logs/$job_id/job.sbatch")"
"${clean_env[@]}" SLURM_CONF="$cluster/etc/slurm.conf" "$bundle/bin/mgpr-logs" "$job_id" >"$work/logs.log" 2>&1
grep -q "finished" "$work/logs.log" || { cat "$work/logs.log"; fail "mgpr-logs does not say the job finished"; }
[ "$(wc -l <mgpr_output/demo_tiles.csv 2>/dev/null)" = 5 ] || fail "the job's demo_tiles.csv does not list its 4 tiles"

"$local_slurm" stop "$cluster" >/dev/null
[ $failures = 0 ] || exit 1
echo "bundle made, unpacked, relocatable, ran mgpr alone and as a Slurm job ($((SECONDS - start)) s)"
# Hundreds of megabytes (gigabytes for a CUDA build): kept only when something failed.
rm -rf "$work"
