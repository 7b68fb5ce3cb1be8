"""The generated reference of the public Python API, ``docs/api.md``.

``python -m rbc.apiref > docs/api.md`` regenerates it from the signatures and docstrings of
:mod:`rbc.api` (``tests/test_apiref.py`` fails when the page and the code disagree).
"""

from __future__ import annotations

import inspect
import re

HEADER = """# Python API reference

Generated from the docstrings of `rbc.api` by `python -m rbc.apiref > docs/api.md` (a test
checks it is current). The guide with runnable examples is [docs/python.md](python.md).
Names below are importable from `rbc` (`rbc.load`, `rbc.Model`, …).
"""


def _signature(obj, name: str) -> str:
    try:
        sig = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return name
    sig = re.sub(r"\s+", " ", sig).replace("'", "")  # annotations are strings here
    return name + re.sub(r"^\(self(, |\))", lambda m: "(" if m.group(1) == ", " else "()", sig)


def _doc(obj) -> str:
    return inspect.cleandoc(obj.__doc__ or "(undocumented)")


def _public_members(cls) -> list[tuple[str, object]]:
    out = []
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(member, property) or inspect.isfunction(member):
            out.append((name, member))
    return out


def reference() -> str:
    """The whole page (markdown)."""
    from rbc import api

    parts = [HEADER]
    for name in api.__all__:
        obj = getattr(api, name)
        if inspect.isfunction(obj):
            parts.append(f"## `rbc.{_signature(obj, name)}`\n\n```text\n{_doc(obj)}\n```\n")
            continue
        if getattr(obj, "__module__", "") != api.__name__:
            where = f"{obj.__module__}.{obj.__qualname__}"
            parts.append(f"## `rbc.{name}`\n\nThe same object as `{where}`.\n\n```text\n"
                         f"{_doc(obj)}\n```\n")
            continue
        parts.append(f"## `rbc.{name}`\n\n```text\n{_doc(obj)}\n```\n")
        for member_name, member in _public_members(obj):
            if isinstance(member, property):
                head = f"### `{name}.{member_name}` (property)"
                body = _doc(member.fget)
            else:
                head = f"### `{name}.{_signature(member, member_name)}`"
                body = _doc(member)
            parts.append(f"{head}\n\n```text\n{body}\n```\n")
    return "\n".join(parts)


if __name__ == "__main__":
    print(reference(), end="")
