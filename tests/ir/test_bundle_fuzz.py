"""Property-based: real bundles, mutated (deleted, truncated, resized, NaN-filled, retyped,
re-indexed datasets and attributes, with and without a forged content digest), read by
``rbc inspect`` and ``rbc solve``. Invariant: exit 0 with valid output or exit 2 with a
message naming the file; never another status, a traceback or a changed input."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rbc.cli.main import main
from rbc.ir.bundle import DIGEST_ATTR, _read_all, content_digest
from tests.conftest import RECORDS

# bounded for CI: every example copies a bundle and runs two commands (~0.3 s)
FUZZ = settings(max_examples=60, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def originals(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("fuzz_bundles")
    paths = {}
    for name in ("fourbar", "slider_crank"):
        paths[name] = out / f"{name}.h5"
        assert main(["compile", str(RECORDS / f"{name}.yaml"), "-o", str(paths[name])]) == 0
    return paths


def _datasets(path: Path) -> list[str]:
    names: list[str] = []
    with h5py.File(path) as h5:
        h5.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
    return sorted(names)


MUTATIONS = ("delete", "truncate", "enlarge", "nan", "retype_float", "retype_str", "poke",
             "negate", "attr")


def _mutate(h5: h5py.File, name: str, kind: str, value: int) -> None:
    ds = h5[name]
    data = ds[()]
    is_str = h5py.check_string_dtype(ds.dtype) is not None
    del h5[name]
    arr = np.asarray(data)
    if kind == "delete":
        return
    if kind == "attr":
        h5[name] = data
        grp = h5[name.rsplit("/", 1)[0]] if "/" in name else h5
        keys = list(grp.attrs) or ["x"]
        grp.attrs[keys[value % len(keys)]] = [value, -value] if value % 3 else "junk"
        return
    if kind in ("truncate", "enlarge") and arr.ndim:
        n = arr.shape[0]
        arr = arr[: max(n - 1 - value % 3, 0)] if kind == "truncate" else np.concatenate(
            [arr, arr[:1].repeat(1 + value % 3, axis=0)] if n else [arr])
    elif kind == "nan" and arr.dtype.kind == "f":
        arr = np.full(arr.shape, np.nan)
    elif kind == "retype_float" and not is_str:
        arr = arr.astype(float) + 0.5
    elif kind == "retype_str":
        arr = np.array([f"x{value}"] * max(arr.size, 1), dtype=h5py.string_dtype())
    elif kind == "poke" and arr.size and not is_str:
        arr = arr.copy()
        arr.flat[value % arr.size] = (value * 7919) % 2000 - 1000
    elif kind == "negate" and arr.size and not is_str and arr.dtype.kind in "if":
        arr = -arr - 1
    h5.create_dataset(name, data=arr)


def _forge(path: Path) -> None:
    """Re-stamp the content digest (and the record hash) as a deliberate forger would."""
    with h5py.File(path, "a") as h5:
        if "record/text" in h5:
            text = h5["record/text"][()]
            text = text if isinstance(text, bytes) else str(text).encode()
            h5["meta"].attrs["record_sha256"] = hashlib.sha256(text).hexdigest()
        try:
            h5["meta"].attrs[DIGEST_ATTR] = content_digest(_read_all(path, h5))
        except (ValueError, TypeError, OSError):
            pass


@FUZZ
@given(bundle=st.sampled_from(["fourbar", "slider_crank"]), pick=st.integers(0, 10_000),
       kind=st.sampled_from(MUTATIONS), value=st.integers(0, 10_000), forge=st.booleans())
def test_mutated_bundles_exit_0_or_2(tmp_path_factory, capsys, originals, bundle, pick, kind,
                                     value, forge):
    work = tmp_path_factory.mktemp("m")
    path = work / "b.h5"
    shutil.copy(originals[bundle], path)
    names = _datasets(path)
    name = names[pick % len(names)]
    with h5py.File(path, "a") as h5:
        _mutate(h5, name, kind, value)
    if forge:
        _forge(path)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    for argv in (["inspect", str(path), "--json"], ["solve", str(path)]):
        code = main(argv)
        err = capsys.readouterr().err
        assert code in (0, 2), (name, kind, forge, err)
        if code == 2:
            assert str(path) in err and "Traceback" not in err, err
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in work.iterdir()) == ["b.h5"]


def test_unforged_edits_are_always_refused(tmp_path, capsys, originals):
    """Without a forged digest every real change is refused as tampering."""
    for name in _datasets(originals["fourbar"]):
        path = tmp_path / "b.h5"
        shutil.copy(originals["fourbar"], path)
        with h5py.File(path, "a") as h5:
            _mutate(h5, name, "delete", 0)
        assert main(["inspect", str(path)]) == 2, name
        assert f"{path}" in capsys.readouterr().err


def test_forged_structure_is_caught_by_the_value_checks(tmp_path, capsys, originals):
    """A forger who re-stamps the digest still cannot get a bad index to the numerics."""
    cases = {"/chords/path_edge": 99, "/forest/parent_edge": 7, "/coordinates/v_offset": 50,
             "/partitions/default/dependent": 3, "/partitions/default/rows": 40}
    for name, bad in cases.items():
        path = tmp_path / "b.h5"
        shutil.copy(originals["fourbar"], path)
        with h5py.File(path, "a") as h5:
            ds = h5[name.lstrip("/")]
            arr = ds[()].copy()
            arr.flat[0] = bad
            ds[...] = arr
        _forge(path)
        assert main(["solve", str(path)]) == 2, name
        err = capsys.readouterr().err
        assert f"{path}: {name}" in err or f"{path}: /partitions/default" in err, err
    path = tmp_path / "b.h5"
    shutil.copy(originals["fourbar"], path)
    with h5py.File(path, "a") as h5:
        ds = h5["partitions/default/q_ref"]
        ds[0] = ds[0] + 0.5  # opens the loop (the crank moves, the rest stays)
    _forge(path)
    assert main(["solve", str(path)]) == 2
    assert "does not close" in capsys.readouterr().err
