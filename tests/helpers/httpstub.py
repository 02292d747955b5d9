"""A real local HTTP server whose answers a test chooses: collectors are tested over a socket, with their
real ``requests`` calls, timeouts and headers, instead of a mocked transport.

``stub.route(path, answer)``: ``answer`` is ``(status, content_type, body)``, or a callable taking the
query (``{name: [values]}``) and returning one; a ``delay`` (seconds) before answering makes a slow source.
Every request is recorded in ``stub.requests`` as ``(path, query, headers)``; while a callable answers,
``stub.client`` is the ``(host, port)`` the request came from.
"""

import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class StubServer:
    def __init__(self):
        self.routes, self.requests, self.answering = {}, [], threading.local()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # the name http.server calls
                url = urlsplit(self.path)
                query = parse_qs(url.query)
                stub.requests.append((url.path, query, dict(self.headers)))
                stub.answering.client = self.client_address
                answer, delay = stub.routes.get(url.path, ((404, "text/plain", "not found"), 0))
                if delay:
                    time.sleep(delay)
                status, content_type, body = answer(query) if callable(answer) else answer
                data = body.encode() if isinstance(body, str) else body
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout tests)
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def route(self, path, answer, delay=0):
        self.routes[path] = (answer, delay)

    @property
    def client(self):
        return self.answering.client

    def url(self, path=""):
        return self.base + path

    def hits(self, path):
        return [query for hit_path, query, _ in self.requests if hit_path == path]


@contextmanager
def stub_server():
    stub = StubServer()
    thread = threading.Thread(target=stub.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        stub.server.shutdown()
        stub.server.server_close()
