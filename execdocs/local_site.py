"""Serve a built site from localhost in a background thread, for the browser tests and the audit."""

import contextlib
import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # one line per request would bury the test report
        pass


@contextlib.contextmanager
def serve(folder: Path) -> Iterator[str]:
    """The site in `folder` at http://127.0.0.1:<free port>/ for as long as the context lasts."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
