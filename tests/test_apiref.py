"""docs/api.md is the reference generated from rbc.api's docstrings, and it is current."""

from __future__ import annotations

import inspect

from rbc import api
from rbc.apiref import reference
from tests.conftest import REPO


def test_api_md_is_current():
    page = (REPO / "docs" / "api.md").read_text()
    assert page == reference(), "docs/api.md is stale: python -m rbc.apiref > docs/api.md"


def test_every_public_call_is_documented():
    """Shapes and errors: every public method says what it raises or returns."""
    for name in api.__all__:
        obj = getattr(api, name)
        assert (obj.__doc__ or "").strip(), name
        if inspect.isclass(obj) and obj.__module__ == api.__name__:
            for member, fn in vars(obj).items():
                if inspect.isfunction(fn) and not member.startswith("_"):
                    assert (fn.__doc__ or "").strip(), f"{name}.{member}"
