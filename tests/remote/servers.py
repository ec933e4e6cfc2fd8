"""Real servers on loopback for the remote-reading tests and bench/remote-vs-local.

  Nginx(root, work)        Debian's nginx serving the files of `root` over HTTP (range
                           requests are nginx's default for static files), with an access
                           log of request line, Range header, status and bytes
  Seaweed(weed, work, ...) SeaweedFS (`weed mini`): its S3 gateway with one access key

The faults between them and mgpr are fault_proxy.FaultProxy's.

Each starts on free loopback ports, writes only under its `work` folder, and stops with
stop() (also on exit of the `with` block). Nothing is downloaded: the programs are found
on this machine (nginx on PATH or /usr/sbin, weed from scripts/fetch-test-servers or
$MGPR_TEST_WEED), and None is returned with the reason when one is missing.

Plain Python 3, standard library only.
"""
import datetime
import hashlib
import hmac
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.parse
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def free_port():
    """A TCP port on 127.0.0.1 nobody listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port, timeout, process=None, log=None):
    """Waits until 127.0.0.1:port accepts connections; raises naming the log otherwise."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode} before listening on {port}"
                               + (f"; its log: {log}" if log else ""))
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout} s"
                       + (f"; the server's log: {log}" if log else ""))


def find_nginx():
    """(path, None) or (None, why)."""
    for candidate in (shutil.which("nginx"), "/usr/sbin/nginx"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate, None
    return None, "nginx is not installed (Debian's nginx-light; scripts/install-deps installs it)"


def find_weed():
    """(path, None) or (None, why)."""
    given = os.environ.get("MGPR_TEST_WEED")
    if given:
        if os.access(given, os.X_OK):
            return given, None
        return None, f"MGPR_TEST_WEED={given} is not an executable"
    found = sorted((REPO / "out" / "test-servers").glob("seaweedfs-*/weed"))
    if found and os.access(found[-1], os.X_OK):
        return str(found[-1]), None
    return None, ("SeaweedFS's weed is not under out/test-servers/ (scripts/fetch-test-servers, "
                  "run by scripts/install-deps, puts it there; or set MGPR_TEST_WEED)")


class Nginx:
    """nginx in the foreground on 127.0.0.1:<port>, serving `root`."""

    def __init__(self, root, work, port=None):
        self.root = Path(root).resolve()
        self.work = Path(work).resolve()
        self.port = port or free_port()
        self.access_log = self.work / "access.log"
        self.error_log = self.work / "error.log"
        self.process = None

    def start(self):
        nginx, why = find_nginx()
        if nginx is None:
            raise RuntimeError(why)
        self.work.mkdir(parents=True, exist_ok=True)
        temp = self.work / "temp"
        temp.mkdir(exist_ok=True)
        # As root the workers would run as nobody, who may not read the test's folders.
        user = "user root root;\n" if os.geteuid() == 0 else ""
        config = self.work / "nginx.conf"
        config.write_text(f"""{user}worker_processes 1;
pid {self.work}/nginx.pid;
error_log {self.error_log} warn;
events {{ worker_connections 512; }}
http {{
  log_format ranges '$request "$http_range" $status $body_bytes_sent';
  access_log {self.access_log} ranges;
  client_body_temp_path {temp}/body;
  proxy_temp_path {temp}/proxy;
  fastcgi_temp_path {temp}/fastcgi;
  uwsgi_temp_path {temp}/uwsgi;
  scgi_temp_path {temp}/scgi;
  types {{ image/tiff tif; }}
  default_type application/octet-stream;
  sendfile on;
  keepalive_requests 100000;
  server {{
    listen 127.0.0.1:{self.port};
    root {self.root};
    location / {{ }}
  }}
}}
""")
        self.process = subprocess.Popen(
            [nginx, "-p", str(self.work), "-c", str(config), "-e", str(self.error_log), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL, stderr=open(self.work / "stderr.log", "ab"))
        wait_for_port(self.port, 10, self.process, self.error_log)
        return self

    def url(self, name):
        return f"http://127.0.0.1:{self.port}/{name}"

    def requests(self):
        """The access log's lines so far."""
        if not self.access_log.exists():
            return []
        return self.access_log.read_text().splitlines()

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGQUIT)  # nginx's graceful stop
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def _sign(key, message):
    return hmac.new(key, message.encode(), hashlib.sha256).digest()


def s3_request(method, port, path, access_key, secret, body=b"", region="us-east-1"):
    """One AWS Signature Version 4 signed request to 127.0.0.1:port (path style)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    stamp, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    payload = hashlib.sha256(body).hexdigest()
    host = f"127.0.0.1:{port}"
    canonical_path = urllib.parse.quote(path, safe="/-_.~")
    headers = {"host": host, "x-amz-content-sha256": payload, "x-amz-date": stamp}
    signed = ";".join(sorted(headers))
    canonical = "\n".join([method, canonical_path, "", *(f"{k}:{headers[k]}" for k in sorted(headers)), "",
                           signed, payload])
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _sign(_sign(_sign(_sign(("AWS4" + secret).encode(), day), region), "s3"), "aws4_request")
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = (f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, SignedHeaders={signed}, "
                                f"Signature={signature}")
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request(method, canonical_path, body=body, headers=headers)
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


class Seaweed:
    """SeaweedFS (`weed mini`) on loopback: master, volume, filer and the S3 gateway,
    with one identity (access_key, secret) allowed everything."""

    def __init__(self, work, access_key, secret):
        self.work = Path(work).resolve()
        self.access_key = access_key
        self.secret = secret
        self.port = None  # the S3 gateway's
        self.process = None
        self.log = self.work / "weed.log"

    def start(self, timeout=60):
        weed, why = find_weed()
        if weed is None:
            raise RuntimeError(why)
        self.work.mkdir(parents=True, exist_ok=True)
        (self.work / "data").mkdir(exist_ok=True)
        identities = self.work / "s3.json"
        identities.write_text(json.dumps({"identities": [{
            "name": "mgpr-test",
            "credentials": [{"accessKey": self.access_key, "secretKey": self.secret}],
            "actions": ["Admin", "Read", "List", "Tagging", "Write"]}]}))
        identities.chmod(0o600)
        ports = {name: free_port() for name in (
            "master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
            "filer.port.grpc", "s3.port", "s3.port.grpc", "webdav.port", "admin.port", "admin.port.grpc")}
        self.port = ports["s3.port"]
        argv = [weed, "mini", f"-dir={self.work / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                f"-s3.config={identities}", "-webdav=false", "-admin.ui=false",
                "-master.volumeSizeLimitMB=64", "-volume.max=8", "-master.telemetry=false"]
        argv += [f"-{name}={port}" for name, port in ports.items()]
        # Its own process group: stop() ends every process it started.
        self.process = subprocess.Popen(argv, stdout=open(self.log, "ab"), stderr=subprocess.STDOUT,
                                        start_new_session=True)
        wait_for_port(self.port, timeout, self.process, self.log)
        # The gateway listens before the filer and volumes are ready: wait until a bucket
        # can be created.
        deadline = time.monotonic() + timeout
        while True:
            try:
                status, body = s3_request("PUT", self.port, "/mgpr-ready", self.access_key, self.secret)
                if status in (200, 409):
                    break
            except OSError as error:
                status, body = None, str(error).encode()
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"SeaweedFS's S3 gateway answers no bucket creation: {status} "
                                   f"{body[:300]!r}; its log: {self.log}")
            time.sleep(0.2)
        return self

    def make_bucket(self, bucket):
        status, body = s3_request("PUT", self.port, f"/{bucket}", self.access_key, self.secret)
        if status not in (200, 409):
            raise RuntimeError(f"creating bucket {bucket}: {status} {body[:300]!r}")

    def put(self, bucket, key, path):
        status, body = s3_request("PUT", self.port, f"/{bucket}/{key}", self.access_key, self.secret,
                                  Path(path).read_bytes())
        if status != 200:
            raise RuntimeError(f"uploading {path} to {bucket}/{key}: {status} {body[:300]!r}")

    def environment(self, secret=None):
        """GDAL's settings for /vsis3/ on this server (path style, plain HTTP)."""
        return {"AWS_S3_ENDPOINT": f"127.0.0.1:{self.port}", "AWS_HTTPS": "NO", "AWS_VIRTUAL_HOSTING": "FALSE",
                "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": self.access_key,
                "AWS_SECRET_ACCESS_KEY": secret if secret is not None else self.secret,
                "AWS_NO_SIGN_REQUEST": "NO", "AWS_CONFIG_FILE": os.devnull,
                "AWS_SHARED_CREDENTIALS_FILE": os.devnull}

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
            except ProcessLookupError:
                pass
        self.process = None

    def __enter__(self):
        return self if self.process is not None else self.start()

    def __exit__(self, *exc):
        self.stop()
