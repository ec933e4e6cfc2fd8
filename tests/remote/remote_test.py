#!/usr/bin/env python3
"""mgpr reading remote rasters from real servers on loopback, started and stopped here
(tests/remote/servers.py): nginx over HTTP, SeaweedFS's S3 gateway, and a fault-injecting
proxy in front of nginx (fault_proxy.py). Each case runs mgpr (task=classify, a tile-mean classifier from
mgpr-test-model, so every pixel counts) on a 1024x1024 COG of 256x256 blocks and
compares its tile CSV with the same COG read from disk.

  remote_test.py --bin BUILD/bin CASE

CASE: http, s3, http_503, http_dropped, http_reset, http_slow, http_stopped, s3_wrong_secret,
url_forms. Exits 77 (ctest's skip) with the reason when nginx or SeaweedFS is not
installed (scripts/install-deps installs both); never downloads anything.
"""
import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fault_proxy  # noqa: E402
import servers  # noqa: E402

SKIP = 77
ACCESS_KEY = "mgprtestaccess"
SECRET = "mgprTestSecret0123456789abcdefXYZ"
WRONG_SECRET = "wrongSecretValue9876543210zyxwvuQP"
# GDAL's and mgpr's retries, fast: 6 tries, 0.05 s then doubling (1.55 s in all).
FAST_RETRIES = {"GDAL_HTTP_MAX_RETRY": "5", "GDAL_HTTP_RETRY_DELAY": "0.05"}


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


class Case:
    def __init__(self, bin_dir, work):
        self.bin = Path(bin_dir)
        self.work = Path(work)
        self.data = self.work / "data"
        self.data.mkdir()
        self.cog = self.data / "scene.tif"
        self.model = self.work / "mean.pt"
        self._make_inputs()

    def _make_inputs(self):
        source = self.work / "source.tif"
        self._run([self.bin / "mgpr-test-image", source, "--size", "1024", "--square", "100,100,40",
                   "--square", "700,500,60"])
        self._run(["gdal_translate", "-q", "-of", "COG", "-co", "BLOCKSIZE=256", "-co", "COMPRESS=DEFLATE",
                   source, self.cog])
        self._run([self.bin / "mgpr-test-model", "tile-mean", self.model])

    @staticmethod
    def _run(argv):
        result = subprocess.run([str(a) for a in argv], capture_output=True, text=True)
        if result.returncode != 0:
            raise Failure(f"{argv[0]} failed ({result.returncode}): {result.stderr[-2000:]}")

    # One tile a batch: a tile's mean moves in the eighth digit with its batch partners
    # (the reduction is laid out by batch size), and which tiles share a batch differs
    # from run to run with two readers; alone, a tile's result depends on its pixels only,
    # so the CSVs are compared exactly.
    def argv(self, raster, out):
        return [str(a) for a in (self.bin / "mgpr", raster, f"model={self.model}", "task=classify", "tile_size=256",
                                 "overlap=32", "batch_size=1", "workers=2", "accelerator=cpu", f"output_dir={out}")]

    @staticmethod
    def environment(out, env):
        environment = {**os.environ, "MGPR_LOG_DIR": str(Path(out) / "logs"), **(env or {})}
        # The user's own credentials and settings never leak into the test.
        for name in list(environment):
            if name.startswith(("AWS_", "GS_", "CPL_", "VSI_")) and not (env and name in env):
                del environment[name]
        return environment

    def mgpr(self, raster, out, env=None, timeout=120):
        """Runs mgpr over `raster` into `out`; the CompletedProcess, with .seconds."""
        started = time.monotonic()
        result = subprocess.run(self.argv(raster, out), capture_output=True, text=True,
                                env=self.environment(out, env), timeout=timeout)
        result.seconds = time.monotonic() - started
        return result

    def mgpr_started(self, raster, out, env=None):
        """mgpr over `raster` into `out`, running: the Popen (output into out/../*.txt)."""
        Path(out).mkdir(parents=True, exist_ok=True)
        stdout = open(Path(out).parent / "started.stdout.txt", "w")
        stderr = open(Path(out).parent / "started.stderr.txt", "w")
        return subprocess.Popen(self.argv(raster, out), stdout=stdout, stderr=stderr, text=True,
                                env=self.environment(out, env))

    @staticmethod
    def tiles(out):
        """The tile CSV's rows without the raster column (the path differs)."""
        found = sorted(Path(out).glob("*_tiles.csv"))
        check(len(found) == 1, f"{out}: expected one *_tiles.csv, found {[p.name for p in found]}")
        with open(found[0], newline="") as file:
            rows = list(csv.reader(file))
        return [row[1:] for row in rows]

    def local_tiles(self):
        out = self.work / "local"
        result = self.mgpr(self.cog, out)
        check(result.returncode == 0, f"local run failed: {result.stderr[-2000:]}")
        rows = self.tiles(out)
        check(len(rows) == 26, f"local run: expected a header and 25 tiles, got {len(rows)} rows")
        return rows

    def same_as_local(self, raster, out, env=None, what="remote run"):
        local = self.local_tiles()
        result = self.mgpr(raster, out, env)
        check(result.returncode == 0,
              f"{what} exited {result.returncode}:\n{result.stdout[-1500:]}\n{result.stderr[-3000:]}")
        remote = self.tiles(out)
        check(remote == local, f"{what}: the tile CSV differs from the local run's")
        print(f"{what}: {len(remote) - 1} tiles identical to the local run in {result.seconds:.1f} s")
        return result


def need(found_why):
    found, why = found_why
    if found is None:
        print(f"SKIP: {why}")
        sys.exit(SKIP)


def http_case(case, **faults):
    need(servers.find_nginx())
    with servers.Nginx(case.data, case.work / "nginx") as nginx:
        if not faults:
            result = case.same_as_local("/vsicurl/" + nginx.url(case.cog.name), case.work / "remote", what="HTTP")
            requests = [line for line in nginx.requests() if line.startswith("GET")]
            print(f"HTTP: {len(nginx.requests())} requests, {len(requests)} GETs for 25 tiles")
            check(not any('"-" 200' in line for line in requests), "a GET without a range: the whole file was read")
            return
        with fault_proxy.FaultProxy(nginx.port, **faults) as proxy:
            url = f"/vsicurl/http://127.0.0.1:{proxy.port}/{case.cog.name}"
            result = case.same_as_local(url, case.work / "remote", FAST_RETRIES, what=f"HTTP with {faults}")
            print(f"proxy: {proxy.gets} GETs, {proxy.failed} answered 503, {proxy.dropped} cut short")
            check(proxy.failed + proxy.dropped > 0 or "delay_s" in faults, "no fault was injected")
            return result


def case_http(case):
    http_case(case)


def case_http_503(case):
    http_case(case, fail_every=3)


def case_http_dropped(case):
    http_case(case, drop_every=7)


def case_http_reset(case):
    http_case(case, drop_every=7, reset=True)


def case_http_slow(case):
    result = http_case(case, delay_s=0.15)
    check(result.seconds < 60, f"slow answers took {result.seconds:.0f} s")


def case_http_stopped(case):
    """The server goes away mid-run: a clear error naming the URL, the journal kept, and
    once the server is back the same command finishes the rest, identical."""
    need(servers.find_nginx())
    local = case.local_tiles()
    out = case.work / "remote"
    with servers.Nginx(case.data, case.work / "nginx") as nginx:
        # Slow answers, so the run is still reading when the first batch is journaled;
        # then the server goes away: nothing listens on its port any more.
        proxy = fault_proxy.FaultProxy(nginx.port, delay_s=0.3).start()
        url = f"http://127.0.0.1:{proxy.port}/{case.cog.name}"
        raster = "/vsicurl/" + url
        try:
            running = case.mgpr_started(raster, out, FAST_RETRIES)
            deadline = time.monotonic() + 60
            while running.poll() is None and time.monotonic() < deadline:
                if any(j.stat().st_size > 0 for j in (out / ".mgpr-journal").glob("*/rank-*.tiles")):
                    break
                time.sleep(0.02)
        finally:
            proxy.stop()
        try:
            running.wait(60)
        except subprocess.TimeoutExpired:
            running.kill()
            raise Failure("mgpr did not end within 60 s of the server going away") from None
        first = subprocess.CompletedProcess(running.args, running.returncode,
                                            (case.work / "started.stdout.txt").read_text(),
                                            (case.work / "started.stderr.txt").read_text())
        check(first.returncode not in (0, 2), f"the run with the server gone exited {first.returncode}:\n"
                                              f"{first.stderr[-2000:]}")
        error = next((line for line in first.stderr.splitlines() if line.startswith("mgpr:") and url in line), None)
        check(error is not None, f"no mgpr error line names the URL {url}:\n{first.stderr[-2000:]}")
        check("run the same command again" in first.stderr, f"the error does not say to run again:\n"
                                                             f"{first.stderr[-2000:]}")
        journals = list((out / ".mgpr-journal").glob("*/rank-*.tiles"))
        check(journals and any(j.stat().st_size > 0 for j in journals),
              f"no journal with finished tiles kept under {out / '.mgpr-journal'}")
        kept = sum(len(j.read_text().splitlines()) for j in journals)
        print(f"stopped after {proxy.gets} GETs: exit {first.returncode}, {kept} tiles journaled; {error[:400]}")
        # The server is back, on the same address.
        proxy = fault_proxy.FaultProxy(nginx.port, port=proxy.port).start()
        try:
            second = case.mgpr(raster, out, FAST_RETRIES)
        finally:
            proxy.stop()
        check(second.returncode == 0, f"the rerun exited {second.returncode}:\n{second.stderr[-2000:]}")
        check("resuming" in second.stdout + second.stderr, "the rerun did not say it resumed")
        check(case.tiles(out) == local, "after the resume the tile CSV differs from the local run's")
        check(not list((out / ".mgpr-journal").glob("*/rank-*.tiles")), "the journal was not removed at the end")
        print("rerun resumed and finished identical to the local run")


def seaweed(case):
    need(servers.find_weed())
    store = servers.Seaweed(case.work / "seaweed", ACCESS_KEY, SECRET).start()
    try:
        store.make_bucket("rasters")
        store.put("rasters", "scenes/scene.tif", case.cog)
    except BaseException:
        store.stop()
        raise
    return store


def case_s3(case):
    with seaweed(case) as store:
        env = {**store.environment(), **FAST_RETRIES}
        case.same_as_local("/vsis3/rasters/scenes/scene.tif", case.work / "remote", env, what="S3")


def case_s3_wrong_secret(case):
    with seaweed(case) as store:
        out = case.work / "remote"
        env = {**store.environment(secret=WRONG_SECRET), **FAST_RETRIES}
        result = case.mgpr("/vsis3/rasters/scenes/scene.tif", out, env)
        check(result.returncode == 2, f"a refused key exited {result.returncode}, not 2 (usage):\n"
                                      f"{result.stderr[-2000:]}")
        check("rasters" in result.stderr and "credentials were refused" in result.stderr,
              f"the error does not say the credentials were refused for bucket rasters:\n{result.stderr[-2000:]}")
        check("AWS_SECRET_ACCESS_KEY" in result.stderr, "the error does not name the variable to check")
        texts = {"stdout": result.stdout, "stderr": result.stderr}
        for path in out.rglob("*"):
            if path.is_file():
                texts[str(path)] = path.read_bytes().decode("latin-1")
        for secret in (WRONG_SECRET, SECRET):
            leaked = [name for name, text in texts.items() if secret in text]
            check(not leaked, f"a secret appears in {leaked}")
        print("refused key: " + next(line for line in result.stderr.splitlines() if "rasters" in line)[:400])


def case_url_forms(case):
    """The forms users type: http(s):// and s3:// URLs, also from a list file."""
    need(servers.find_nginx())
    with servers.Nginx(case.data, case.work / "nginx") as nginx, seaweed(case) as store:
        url = nginx.url(case.cog.name)
        check(url.startswith("http://"), f"nginx.url gave {url}")
        case.same_as_local(url, case.work / "http-url", what="http:// URL")
        listing = case.work / "remote.txt"
        listing.write_text(f"# the survey's scene, served over HTTP\n{url}\n")
        case.same_as_local(f"@{listing}", case.work / "list", what="list of URLs")
        env = {**store.environment(), **FAST_RETRIES}
        case.same_as_local("s3://rasters/scenes/scene.tif", case.work / "s3-url", env, what="s3:// URL")


CASES = {name[len("case_"):]: function for name, function in globals().items() if name.startswith("case_")}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="the folder of mgpr, mgpr-test-image and mgpr-test-model")
    parser.add_argument("case", choices=sorted(CASES))
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    if shutil.which("gdal_translate") is None:
        print("SKIP: gdal_translate (gdal-bin) is not installed")
        return SKIP
    work = Path(tempfile.mkdtemp(prefix=f"mgpr-remote-{args.case}-"))
    try:
        CASES[args.case](Case(args.bin, work))
    except Failure as failure:
        print(f"FAIL: {failure}\n(files kept under {work})", file=sys.stderr)
        return 1
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
