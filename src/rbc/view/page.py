"""The self-contained HTML page of ``rbc view``.

One file carries everything it needs: the scene (JSON, :mod:`rbc.view.scene`), the app
(``app.js``) and the vendored three.js r170 with its OrbitControls (MIT; ``vendor/``,
base64-encoded and loaded as blob modules), so it opens offline from disk or from the
local server of :mod:`rbc.view.serve` alike.
"""

from __future__ import annotations

import base64
import html
import json
from importlib import resources


def _asset(name: str) -> str:
    return (resources.files("rbc.view") / name).read_text(encoding="utf-8")


def _b64(name: str) -> str:
    return base64.b64encode((resources.files("rbc.view") / name).read_bytes()).decode("ascii")


def scene_json(scene: dict) -> str:
    """``scene`` as JSON safe to embed in a ``<script>`` element (``<``, ``>`` and ``&``
    escaped as JSON unicode escapes, so no text in a record can close the element)."""
    text = json.dumps(scene, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_page(scene: dict) -> str:
    """The complete HTML document (str) that draws ``scene``.

    Raises:
        ValueError: the scene holds a non-finite number (JSON cannot carry it).
    """
    parts = {
        "__TITLE__": html.escape(str(scene.get("title", ""))),
        "__THREE__": _b64("vendor/three.module.min.js"),
        "__ORBIT__": _b64("vendor/OrbitControls.js"),
        "__SCENE__": scene_json(scene),
        "__APP__": _asset("app.js"),
    }
    page = _asset("page.html")
    for key, value in parts.items():
        page = page.replace(key, value, 1)
    return page
