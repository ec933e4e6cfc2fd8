"""A plain-Python HTTP/1.1 proxy that puts faults between mgpr and the servers of
servers.py: 503 for every Nth request, connections dropped mid-answer, slow answers,
stopped and started again on the same port. For the remote-reading tests.

Plain Python 3, standard library only.
"""
import http.client
import socket
import threading
import time

from servers import free_port


class FaultProxy:
    """An HTTP/1.1 proxy on 127.0.0.1:<port> in front of 127.0.0.1:<upstream>, keeping
    connections alive both ways. Faults, counted over GET requests (1-based):

      fail_every=N   every Nth GET is answered 503 Service Unavailable
      drop_every=N   every Nth GET gets its headers and half its body, then the
                     connection is closed (a reset when reset=True)
      delay_s=S      every answer waits S seconds first
      stop_after=N   after N GETs the proxy stops: every connection is closed and
                     nothing listens any more (the server gone mid-run)

    stop() and start() again keep the port."""

    def __init__(self, upstream_port, port=None, fail_every=0, drop_every=0, reset=False, delay_s=0.0,
                 stop_after=0):
        self.upstream_port = upstream_port
        self.port = port or free_port()
        self.fail_every = fail_every
        self.drop_every = drop_every
        self.reset = reset
        self.delay_s = delay_s
        self.stop_after = stop_after
        self.gets = 0
        self.failed = 0
        self.dropped = 0
        self._lock = threading.Lock()
        self._listener = None
        self._clients = set()
        self._threads = []
        self._stopping = threading.Event()

    def start(self):
        self._stopping.clear()
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        thread = threading.Thread(target=self._accept, daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def stop(self):
        self._stopping.set()
        if self._listener is not None:
            try:
                self._listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._listener.close()
            self._listener = None
        with self._lock:
            clients = list(self._clients)
        for client in clients:
            try:
                client.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread in self._threads:
            thread.join(5)
        self._threads = []

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _accept(self):
        listener = self._listener
        while not self._stopping.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            with self._lock:
                self._clients.add(client)
            thread = threading.Thread(target=self._serve, args=(client,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self, client):
        upstream = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=60)
        reader = client.makefile("rb")
        try:
            while not self._stopping.is_set():
                request_line = reader.readline(65537)
                if not request_line:
                    return
                method, target, _ = request_line.decode("latin-1").split(" ", 2)
                headers = []
                while True:
                    line = reader.readline(65537)
                    if line in (b"\r\n", b"\n", b""):
                        break
                    name, value = line.decode("latin-1").split(":", 1)
                    headers.append((name.strip(), value.strip()))
                length = next((int(v) for n, v in headers if n.lower() == "content-length"), 0)
                body = reader.read(length) if length else b""
                if not self._answer(client, upstream, method, target, headers, body):
                    return
        except (OSError, ValueError):
            return
        finally:
            upstream.close()
            with self._lock:
                self._clients.discard(client)
            try:
                client.close()
            except OSError:
                pass

    def _answer(self, client, upstream, method, target, headers, body):
        """Answers one request; False when the connection is to be closed."""
        with self._lock:
            if method == "GET":
                self.gets += 1
            number = self.gets
        if self.stop_after and method == "GET" and number > self.stop_after:
            threading.Thread(target=self.stop, daemon=True).start()
            return False
        if self.delay_s:
            time.sleep(self.delay_s)
        if method == "GET" and self.fail_every and number % self.fail_every == 0:
            with self._lock:
                self.failed += 1
            message = b"503 Service Unavailable (injected)\n"
            client.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
                           b"Content-Length: " + str(len(message)).encode() + b"\r\n\r\n" + message)
            return True
        forwarded = {n: v for n, v in headers if n.lower() not in ("connection", "keep-alive", "upgrade",
                                                                   "http2-settings", "proxy-connection")}
        upstream.request(method, target, body=body or None, headers=forwarded)
        answer = upstream.getresponse()
        payload = answer.read()
        head = [f"HTTP/1.1 {answer.status} {answer.reason}"]
        for name, value in answer.getheaders():
            if name.lower() in ("connection", "keep-alive", "transfer-encoding"):
                continue
            if name.lower() == "content-length" and method != "HEAD":
                continue
            head.append(f"{name}: {value}")
        if method != "HEAD":
            head.append(f"Content-Length: {len(payload)}")
        data = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")
        if method == "HEAD":
            client.sendall(data)
            return True
        if self.drop_every and method == "GET" and number % self.drop_every == 0 and len(payload) > 1:
            with self._lock:
                self.dropped += 1
            client.sendall(data + payload[:len(payload) // 2])
            if self.reset:
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            return False
        client.sendall(data + payload)
        return True
