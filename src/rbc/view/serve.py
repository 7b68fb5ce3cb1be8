"""The local server of ``rbc view``: one page on ``http://127.0.0.1:PORT/``, nothing else.

The page is self-contained (:mod:`rbc.view.page`), so the server only hands out that one
document; every other path is a 404. It listens on the loopback interface only.
"""

from __future__ import annotations

import http.server
from collections.abc import Callable


def make_server(page: str, port: int = 0) -> http.server.ThreadingHTTPServer:
    """A server (not yet running) that serves ``page`` at ``/`` and ``/index.html`` on
    127.0.0.1 (``port`` 0: any free port; read it from ``server.server_address``).

    Raises:
        OSError: the port cannot be bound.
    """
    body = page.encode("utf-8")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the http.server API)
            if self.path.split("?")[0] not in ("/", "/index.html"):
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:  # keep the terminal quiet
            return

    return http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)


def serve_forever(server: http.server.ThreadingHTTPServer,
                  on_ready: Callable[[str], None]) -> None:
    """Run ``server`` until interrupted (Ctrl-C); ``on_ready(url)`` is called first."""
    host, port = server.server_address[:2]
    on_ready(f"http://{host}:{port}/")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
