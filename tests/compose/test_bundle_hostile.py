"""A composed bundle read as untrusted input: /composition and the embedded member bundles
mutated (with and without a forged content digest) are refused with a BundleError naming
the file — never a traceback, never a silently different system."""

from __future__ import annotations

import shutil

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rbc.cli.main import main
from rbc.compose.bundle import load
from rbc.errors import BundleError, RbcError
from tests.ir.test_bundle_fuzz import MUTATIONS, _forge, _mutate

# bounded for CI: every example copies the pair bundle (2 members) and loads it (~1 s)
FUZZ = settings(max_examples=12, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _copy(members_dir, pair, tmp_path):
    src = members_dir / "pair.h5"
    dst = tmp_path / "pair.h5"
    shutil.copy(src, dst)
    return dst


def _composition_datasets(path) -> list[str]:
    names: list[str] = []
    with h5py.File(path) as h5:
        h5["composition"].visititems(
            lambda n, o: names.append("composition/" + n) if isinstance(o, h5py.Dataset)
            else None)
    return sorted(names)


@pytest.mark.parametrize(("name", "edit", "needle"), [
    ("composition/modes/stand/level2/w", lambda a: a + 10_000, "level2/w"),
    ("composition/modes/stand/level2/independent", lambda a: a[::-1].copy(), "partition"),
    ("composition/links/a_frame", lambda a: a * np.array([1, 1, 1, 2, 1, 1, 1]), "quaternion"),
    ("composition/modes/stand/anchors", lambda a: a * np.array([1, 1, 1, 0, 0, 0, 0]),
     "quaternion"),  # a zero support-anchor quaternion (was a traceback in verify/forces)
    ("composition/modes/stand/partition/rows", lambda a: np.r_[a[:1], a[:1], a[2:]],
     "distinct rows"),  # a repeated row (was a singular lift and a traceback in forces)
    ("composition/members/h2/placement", lambda a: a + np.array([0, 0, 0.1, 0, 0, 0, 0]),
     None),  # a forged placement is a different (valid) system: it must load or refuse
])
def test_forged_composition_refused(members_dir, pair, tmp_path, name, edit, needle):
    path = _copy(members_dir, pair, tmp_path)
    with h5py.File(path, "a") as h5:
        a = h5[name][()]
        del h5[name]
        h5[name] = edit(a)
    _forge(path)
    if needle is None:
        try:
            load(path)
        except BundleError as err:
            assert str(path) in str(err)
        return
    with pytest.raises(BundleError, match=needle) as info:
        load(path)
    assert str(path) in str(info.value)


def test_unforged_edit_refused_by_digest(members_dir, pair, tmp_path):
    path = _copy(members_dir, pair, tmp_path)
    with h5py.File(path, "a") as h5:
        h5["composition/modes/stand/anchors"][0, 0] += 1e-3
    with pytest.raises(BundleError, match="content_sha256"):
        load(path)


def test_embedded_member_checked(members_dir, pair, tmp_path):
    """A member bundle replaced by another valid bundle (its SHA-256 forged too) is refused:
    the flat record is no longer the members' records side by side."""
    import hashlib

    path = _copy(members_dir, pair, tmp_path)
    other = (members_dir / "humanoid_v3.h5").read_bytes()
    with h5py.File(path, "a") as h5:
        del h5["composition/members/h2/bundle"]
        h5["composition/members/h2/bundle"] = np.frombuffer(other, dtype=np.uint8)
        h5["composition/members/h2"].attrs["sha256"] = hashlib.sha256(other).hexdigest()
    _forge(path)
    with pytest.raises(BundleError, match="side by side"):
        load(path)


@FUZZ
@given(pick=st.integers(0, 10_000), kind=st.sampled_from(MUTATIONS),
       value=st.integers(0, 10_000), forge=st.booleans())
def test_mutated_composition_exit_0_or_2(members_dir, pair, tmp_path_factory, capsys, pick,
                                         kind, value, forge):
    path = _copy(members_dir, pair, tmp_path_factory.mktemp("m"))
    names = _composition_datasets(path)
    name = names[pick % len(names)]
    with h5py.File(path, "a") as h5:
        if kind == "poke" and h5[name].dtype == np.uint8:  # a byte of an embedded bundle
            a = h5[name][()]
            a[value % a.size] ^= 1 + value % 255
            del h5[name]
            h5[name] = a
        else:
            _mutate(h5, name, kind, value)
    if forge:
        _forge(path)
    try:
        load(path)
    except RbcError as err:
        assert str(path) in str(err)
    code = main(["inspect", str(path), "--json"])
    err = capsys.readouterr().err
    assert code in (0, 2), err
    assert "Traceback" not in err


@pytest.mark.parametrize(("group", "key"), [
    ("composition/members/h1", "partition"), ("composition/members/h1", "sha256"),
    ("composition", "layout")])
def test_attributes_of_another_type_refused(members_dir, pair, tmp_path, group, key):
    """An attribute replaced by an array (the fuzz's "attr" mutation: was a TypeError — an
    unhashable partition name — or an ambiguous array truth value) is a BundleError."""
    path = _copy(members_dir, pair, tmp_path)
    with h5py.File(path, "a") as h5:
        h5[group].attrs[key] = [7, -7]
    _forge(path)
    with pytest.raises(BundleError) as info:
        load(path)
    assert str(path) in str(info.value)
