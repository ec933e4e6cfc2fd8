#!/usr/bin/env bash
# The Debian packages as an administrator meets them: built by CPack from this build,
# lint-free (no lintian error), installed with apt-get, the plugin off until enabled,
# the demo's first job run with the installed programs and plugin on a local cluster,
# then purged, leaving none of their files behind.
#
#   package_test.sh BUILD_DIR LOCAL_SLURM WORK_DIR [WHEEL_LIBTORCH_DIR]
# The packages depend on Debian's LibTorch: a build against a PyTorch wheel's
# (WHEEL_LIBTORCH_DIR, the default build) skips; scripts/test runs this on build-debian/.
set -u
build=$1 local_slurm=$2 work=$3 wheel_libtorch=${4:-}
packages=(mgpr mgpr-launcher mgpr-spank)
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
skip() { echo "skipped: $*"; exit 77; }

[ -z "$wheel_libtorch" ] || skip "this build links PyTorch's wheel LibTorch ($wheel_libtorch); the Debian packages are built against Debian's (MGPR_LIBTORCH=debian scripts/build), and scripts/test runs this test there"
[ "$(id -u)" = 0 ] || skip "installing packages needs root (apt-get); CI runs as root"
for tool in cpack lintian apt-get dpkg-deb; do
  command -v "$tool" >/dev/null || skip "needs $tool (scripts/install-deps installs lintian)"
done
for package in "${packages[@]}"; do
  if dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    skip "$package is already installed on this machine; this test would remove it"
  fi
done

cluster=$work/c
# shellcheck disable=SC2317  # run by the EXIT trap, which shellcheck does not follow
cleanup() {
  "$local_slurm" stop "$cluster" >/dev/null 2>&1
  apt-get purge -y -q "${packages[@]}" >/dev/null 2>&1
}
trap cleanup EXIT
rm -rf "$work" && mkdir -p "$work/debs" "$work/demo"

echo "== cpack"
(cd "$build" && cpack -G DEB -B "$work/debs") >"$work/cpack.log" 2>&1 || { cat "$work/cpack.log"; fail "cpack"; exit 1; }
debs=("$work"/debs/*.deb)
[ ${#debs[@]} = 3 ] || fail "expected 3 packages, got: ${debs[*]}"

echo "== lintian"
lintian --allow-root --fail-on error "${debs[@]}" >"$work/lintian.log" 2>&1 || fail "lintian reports errors"
cat "$work/lintian.log"
if command -v help2man >/dev/null; then
  grep -q "no-manual-page" "$work/lintian.log" && fail "a program without a manual page"
fi

echo "== dependencies and the plugin's Slurm series"
for deb in "${debs[@]}"; do echo "$(dpkg-deb -f "$deb" Package): $(dpkg-deb -f "$deb" Depends)"; done
spank_deb=$(ls "$work"/debs/mgpr-spank_*.deb)
# The series of the Slurm installed here (22.05.8 -> 22.05), which the plugin was built against.
series=$(dpkg-query -W -f='${Version}' slurm-client | sed -n 's/^\([0-9]*\.[0-9]*\)\..*/\1/p')
dpkg-deb -f "$spank_deb" Depends | grep -q "slurm-client (>= $series), slurm-client (<< " ||
  fail "mgpr-spank does not depend on Slurm $series"
dpkg-deb -f "$(ls "$work"/debs/mgpr_*.deb)" Depends | grep -q "libtorch" ||
  fail "mgpr's dependencies (dpkg-shlibdeps) lack LibTorch"
# Debian's LibTorch has no CUDA: the runtime's description says so and where GPUs are served.
dpkg-deb -f "$(ls "$work"/debs/mgpr_*.deb)" Description | tr -s ' \n' ' ' | grep -q "This runtime is CPU-only: .*relocatable bundle" ||
  fail "mgpr's description does not say its runtime is CPU-only and point to the bundle"

echo "== apt-get install"
apt-get install -y -q --no-install-recommends "${debs[@]}" >"$work/install.log" 2>&1 ||
  { tail -20 "$work/install.log"; fail "apt-get install"; exit 1; }
installed_files=()
for package in "${packages[@]}"; do
  while read -r path; do [ -f "$path" ] && installed_files+=("$path"); done < <(dpkg -L "$package")
done
plugin=$(dpkg -L mgpr-spank | grep '/slurm-wlm/mgpr.so$')
snippet=/etc/slurm/plugstack.conf.d/mgpr.conf
if [ -z "$plugin" ] || [ ! -f "$plugin" ]; then fail "the plugin is not under Debian's slurm-wlm plugin folder"; fi
dpkg-query -W -f='${Conffiles}\n' mgpr-spank | grep -q " $snippet " || fail "$snippet is not a conffile"
grep -q "^#optional $plugin " "$snippet" || fail "$snippet lacks the commented plugin line"
grep -q "^[^#]*mgpr.so" "$snippet" && fail "$snippet enables the plugin before the administrator does"
for program in /usr/bin/mgpr /usr/bin/mgpr-test-image /usr/bin/mgpr-submit /usr/bin/mgpr-logs; do
  [ -x "$program" ] || fail "$program not installed"
  if command -v help2man >/dev/null; then
    page=/usr/share/man/man1/$(basename "$program").1.gz
    zgrep -q "^\.SH EXAMPLES" "$page" || fail "$page missing or without its EXAMPLES section"
  fi
done

echo "== the demo's first job with the installed programs and plugin"
"$local_slurm" start "$cluster" --plugin "$plugin" || { fail "cluster start"; exit 1; }
export SLURM_CONF=$cluster/etc/slurm.conf
srun --help 2>&1 | grep -q -- "--mgpr" || fail "srun --help does not list the installed plugin's options"
cd "$work/demo" || exit 1
/usr/bin/mgpr-test-image --size 2048 demo.tif >/dev/null || fail "mgpr-test-image"
# From a folder outside the build, with PATH holding only the system's programs.
PATH=/usr/sbin:/usr/bin:/sbin:/bin /usr/bin/mgpr-submit --gpus a100:2 --wait demo.tif tile_size=512 batch_size=4 \
  >"$work/submit.log" 2>&1 || { cat "$work/submit.log"; fail "the demo's job"; }
cat "$work/submit.log"
job_id=$(head -n 1 "$work/submit.log" | sed -n 's/^mgpr-submit: submitted job \([0-9]*\)$/\1/p')
[ -n "$job_id" ] || fail "no job id in mgpr-submit's output"
grep -q "finished" <(/usr/bin/mgpr-logs "$job_id") || fail "mgpr-logs does not say the job finished"
[ "$(wc -l <mgpr_output/demo_tiles.csv)" = 17 ] || fail "demo_tiles.csv does not list the 16 tiles"
grep -q "^srun .* '\?/usr/bin/mgpr'\? " "slurm_logs/$job_id/job.sbatch" ||
  fail "the job did not run the installed /usr/bin/mgpr: $(grep '^srun' "slurm_logs/$job_id/job.sbatch")"
head -n 2 /usr/share/mgpr/templates/mgpr.sbatch | tail -n 1 | sed 's/{{mgpr_version}}.*//' >"$work/template_head"
grep -qF "$(cat "$work/template_head")" "slurm_logs/$job_id/job.sbatch" || fail "the job script is not the installed template's"
"$local_slurm" stop "$cluster"

echo "== apt-get purge"
apt-get purge -y -q "${packages[@]}" >"$work/purge.log" 2>&1 || { tail -20 "$work/purge.log"; fail "apt-get purge"; }
for path in "${installed_files[@]}"; do [ -e "$path" ] && fail "$path left after purge"; done
[ -e "$snippet" ] && fail "$snippet left after purge"
[ -d /usr/share/mgpr ] && fail "/usr/share/mgpr left after purge"

[ $failures = 0 ] && echo "packages built, lint-free, installed, ran the demo's job, and purged without a trace"
exit $((failures > 0))
