"""Fixtures shared across test directories."""

import http.server
import threading

import pytest


class FileServer:
    """A loopback HTTP server for `files`, with Range support and fault injection.

    Args:
        files: URL path -> content.
        cut_first: paths whose first response sends half the body, then closes.
        honor_range: False makes the server ignore Range (always 200, full body).
    """

    def __init__(self, files: dict[str, bytes], cut_first=(), honor_range=True):
        self.files, self.cut = files, set(cut_first)
        self.honor_range = honor_range
        self.requests: list[tuple[str, str | None]] = []  # (path, Range header)
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                requested = self.headers.get("Range")
                server.requests.append((self.path, requested))
                data = server.files.get(self.path)
                if data is None:
                    self.send_error(404)
                    return
                start = 0
                if requested and server.honor_range:
                    start = int(requested.split("=")[1].split("-")[0])
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                else:
                    self.send_response(200)
                body = data[start:]
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.path in server.cut:  # the connection drops mid-body
                    server.cut.discard(self.path)
                    body = body[: len(body) // 2]
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def file_server():
    """`FileServer`, for tests that download from 127.0.0.1 (never the internet)."""
    return FileServer
