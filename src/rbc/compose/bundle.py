"""The composed bundle: the flat model as an ordinary bundle plus ``/composition``
(docs/bundle.md, "/composition").

A composed bundle is a valid bundle of the flat model (members side by side; every tool
that reads bundles sees K free robots), so its graph, forest, chords, modules and
coordinates are the layout of docs/bundle.md. The group ``/composition`` holds what makes it
a composition: the composition file's text, each member's bundle **embedded** as its bytes
(with their SHA-256, so the composed bundle depends on no other file), the member's
placement and partition name, the links, and per mode the composer's structure (level-2
columns, selected rows, independent and dependent positions) and the equivalent one-level
partition of the mode model. Member index maps are recomputed from the names on load.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from rbc.compose.analysis import Level2
from rbc.compose.flat import MemberMap, flat_record, link_joint, member_map
from rbc.compose.spec import LINK_TYPES
from rbc.compose.system import ComposedMode, Composition
from rbc.errors import BundleError
from rbc.ir import spatial as sp
from rbc.ir.bundle import (
    PARTITION_LAYOUT,
    BundleData,
    check_layout,
    check_poses,
    open_hdf5,
    read_bundle,
    read_embedded_bundle,
    write_bundle,
)
from rbc.ir.derived import pose7
from rbc.ir.record import Joint, Pose
from rbc.model.compiled import CompiledModel, check_partition, read_partition
from rbc.safeio import read_bytes

#: Layout version of ``/composition``.
COMPOSITION_BUNDLE = 1
GROUP = "/composition"


def composed_bundle(comp: Composition, member_files: list[Path]) -> BundleData:
    """The bundle data of a composition (module docstring)."""
    from rbc.passes.codegen import Codegen, put_partition
    from rbc.passes.rank import Partitioned

    out = Codegen().run(Partitioned(comp.ir, comp.flat, (comp.base,)))
    out.attr(GROUP, layout=COMPOSITION_BUNDLE, name=comp.name, source=comp.source)
    out.put(f"{GROUP}/text", comp.text)
    out.put(f"{GROUP}/member_names", [m.name for m in comp.members])
    for m, path in zip(comp.members, member_files, strict=True):
        data = read_bytes(path, "bundle")
        g = f"{GROUP}/members/{m.name}"
        out.attr(g, bundle=Path(path).name, partition=m.partition.name,
                 sha256=hashlib.sha256(data).hexdigest(), record_name=m.model.record.name)
        out.put(f"{g}/bundle", np.frombuffer(data, dtype=np.uint8))
        out.put(f"{g}/placement", np.array(
            [*m.placement.translation, *sp.quat_from_rotation(m.placement.rotation)]))
    links = list(comp.links.values())
    out.put(f"{GROUP}/links/name", [j.name for j in links])
    out.put(f"{GROUP}/links/type", [comp.link_types[j.name] for j in links])
    out.put(f"{GROUP}/links/a_body", [j.parent for j in links])
    out.put(f"{GROUP}/links/b_body", [j.child for j in links])
    out.put(f"{GROUP}/links/a_frame",
            np.array([pose7(j.parent_frame) for j in links], dtype=float).reshape(-1, 7))
    out.put(f"{GROUP}/links/b_frame",
            np.array([pose7(j.child_frame) for j in links], dtype=float).reshape(-1, 7))
    out.put(f"{GROUP}/mode_names", list(comp.modes))
    for name, md in comp.modes.items():
        g = f"{GROUP}/modes/{name}"
        model = comp.model(md)
        out.put(f"{g}/supports", list(md.supports))
        out.put(f"{g}/links", list(md.links))
        out.put(f"{g}/anchors", md.anchors)
        l2 = md.level2
        out.put(f"{g}/level2/w", l2.w)
        out.put(f"{g}/level2/member_ptr", np.array(
            [0, *(s.stop for s in l2.member_cols)], dtype=np.int64))
        out.put(f"{g}/level2/chord_rows", l2.chord_rows)
        out.put(f"{g}/level2/rows", l2.rows)
        out.put(f"{g}/level2/independent", l2.independent)
        out.put(f"{g}/level2/dependent", l2.dependent)
        put_partition(out, f"{g}/partition", md.partition)
        out.attr(g, nq=model.nq, nv=model.nv, n_bodies=model.n_bodies,
                 n_chords=model.n_chords, member_chords=comp.flat.n_chords,
                 speeds=int(md.partition.independent.size), level1_speeds=int(l2.w.size))
    return out


def write_composed(path: str | Path, comp: Composition, member_files: list[Path]) -> Path:
    """Write the composed bundle atomically (:func:`rbc.ir.bundle.write_bundle`)."""
    return write_bundle(path, composed_bundle(comp, member_files))


def has_composition(path: str | Path) -> bool:
    """Whether a bundle file has a ``/composition`` group, from its metadata only (after
    the structure checks of :func:`rbc.ir.bundle.open_hdf5`; the contents are read and
    checked by :func:`load` or :meth:`CompiledModel.from_bundle`).

    Raises:
        BundleError: missing, not a regular file, not HDF5, or refused by the structure
            checks.
    """
    with open_hdf5(path) as h5:
        return GROUP.strip("/") in h5


def open_mode(path: str | Path, mode: str | None, partition: str | None
              ) -> tuple[Composition, ComposedMode] | None:
    """A command's bundle argument: None for a plain bundle, else the composition and the
    composed mode chosen by ``--mode`` (default: the first), for the commands that run on
    a composed mode's model (``rbc forces``, ``rbc simulate``).

    Raises:
        UsageError: ``--mode`` on a plain bundle, ``--partition`` on a composed one (its
            mode's partition is the composer's), or an unknown mode (lists the modes);
        BundleError: as :func:`load`.
    """
    from rbc.errors import UsageError

    if not has_composition(path):
        if mode is not None:
            raise UsageError(f"--mode chooses a composed mode; {path} is not a composed "
                             "bundle (use --partition)")
        return None
    if partition is not None:
        raise UsageError(f"{path} is a composed bundle: choose a composed mode with --mode "
                         "(--partition does not apply)")
    comp = load(path)
    return comp, comp.mode(mode)


def is_composed(data: BundleData) -> bool:
    """Whether read bundle contents are a composed bundle's (have ``/composition``)."""
    return any(k.startswith(GROUP + "/") for k in data.datasets)


#: Layout of ``/composition`` (the notation of :data:`rbc.ir.bundle.LAYOUT`): K members,
#: L links, B flat bodies.
LAYOUT = {
    "text": ("t",),
    "member_names": ("s", "K"),
    "mode_names": ("s", None),
    "links/name": ("s", "L"),
    "links/type": ("s", "L"),
    "links/a_body": ("s", "L"),
    "links/b_body": ("s", "L"),
    "links/a_frame": ("f", ("L", 7)),
    "links/b_frame": ("f", ("L", 7)),
}
MEMBER_LAYOUT = {"bundle": ("i", ("·",), 0, 255), "placement": ("f", (7,))}
#: per mode: k supports, l links, W level-1 speeds, R link and support rows; nq, nv of the
#: mode model (its attributes)
MODE_LAYOUT = {
    "supports": ("s", "k"),
    "links": ("s", None),
    "anchors": ("f", ("k", 7)),
    "level2/w": ("i", ("·",), 0, "nv-1"),
    "level2/member_ptr": ("i", ("K+1",), 0, "W"),
    "level2/chord_rows": ("i", ("·",), 0, None),
    "level2/rows": ("i", ("·",), 0, None),
    "level2/independent": ("i", ("·",), 0, "W-1"),
    "level2/dependent": ("i", ("·",), 0, "W-1"),
}
MODE_INT_ATTRS = ("nq", "nv", "n_bodies", "n_chords", "member_chords", "speeds",
                  "level1_speeds")


def _pose(data: BundleData, path: str, x: np.ndarray) -> Pose:
    """A stored ``[x y z qw qx qy qz]`` (finite, checked by the layout) with a unit
    quaternion (:func:`rbc.ir.bundle.check_poses`)."""
    check_poses(data, path, x)
    return Pose(tuple(float(c) for c in x[:3]), tuple(float(c) for c in x[3:]))


def _mode(data: BundleData, flat: CompiledModel, links: dict[str, Joint], name: str, K: int
          ) -> ComposedMode:
    """One mode group, checked for layout, index ranges and consistency with the flat
    model (the mode model itself is built on demand)."""
    g = f"{GROUP}/modes/{name}"
    for key in MODE_INT_ATTRS:
        data.number(g, key, int)
    nq, nv = int(data.number(g, "nq")), int(data.number(g, "nv"))
    supports = data.strings(f"{g}/supports")
    w_all = data.array(f"{g}/level2/w")
    sizes = {"k": len(supports), "nv": nv, "nq": nq, "K": K,
             "W": w_all.shape[0] if w_all.ndim else -1}
    check_layout(data, g, MODE_LAYOUT, sizes)
    check_layout(data, f"{g}/partition", PARTITION_LAYOUT, sizes)
    known = {x.name for x in flat.record.supports}
    for s_ in supports:
        if s_ not in known:
            raise data.error(f"{g}/supports", f"'{s_}' is not a support of the flat record")
    mode_links = data.strings(f"{g}/links")
    for n in mode_links:
        if n not in links:
            raise data.error(f"{g}/links", f"'{n}' is not a link of the composition")
    n_chords = flat.n_chords + len(mode_links) + len(supports)
    n_rows = 6 * n_chords + len(flat.record.couplings)
    chord_nv = sum(3 if links[n].type == "spherical" else 0 for n in mode_links)
    if int(data.number(g, "n_chords")) != n_chords or nv != flat.nv + chord_nv:
        raise data.error(g, f"@n_chords/@nv disagree with the flat model and the mode's "
                         f"{len(mode_links)} links and {len(supports)} supports")
    l2 = f"{g}/level2"
    w, ptr = data.array(f"{l2}/w"), data.array(f"{l2}/member_ptr")
    ind, dep = data.array(f"{l2}/independent"), data.array(f"{l2}/dependent")
    rows, chord_rows = data.array(f"{l2}/rows"), data.array(f"{l2}/chord_rows")
    if np.unique(w).size != w.size or ptr[0] != 0 or np.any(np.diff(ptr) < 0):
        raise data.error(f"{l2}/w", "repeated speeds or a member pointer that is not "
                         "non-decreasing from 0")
    if np.unique(np.concatenate([ind, dep])).size != w.size or ind.size + dep.size != w.size:
        raise data.error(f"{l2}/independent", "independent and dependent positions must "
                         f"split the {w.size} level-1 speeds")
    if (chord_rows.size and (chord_rows.min() < 0 or chord_rows.max() >= n_rows)) or not set(
            rows.tolist()) <= set(chord_rows.tolist()) or rows.size != dep.size:
        raise data.error(f"{l2}/rows", "rows must be as many as the dependent speeds, among "
                         f"the chord rows, inside 0..{n_rows - 1}")
    part = read_partition(data, f"{g}/partition", name)
    check_partition(data, flat, part, nv=nv, n_rows=n_rows, group=f"{g}/partition")
    if part.q_ref.shape != (nq,) or not np.array_equal(part.independent, w[ind]):
        raise data.error(f"{g}/partition", "its reference configuration or independent speeds "
                         "are not the mode model's and the composer's")
    check_poses(data, f"{g}/anchors", data.array(f"{g}/anchors"))
    level2 = Level2(w, tuple(slice(int(ptr[i]), int(ptr[i + 1])) for i in range(K)),
                    chord_rows, rows, ind, dep)
    return ComposedMode(name, tuple(supports), tuple(mode_links),
                        data.array(f"{g}/anchors"), level2, part)


def load(path: str | Path) -> Composition:
    """Read a composed bundle, trusting nothing in it (:func:`from_data` on
    :func:`rbc.ir.bundle.read_bundle`).

    Raises:
        BundleError: as :func:`from_data`.
    """
    return from_data(read_bundle(path))


def from_data(data: BundleData) -> Composition:
    """A composition from the contents of a composed bundle, trusting nothing in them.

    The file is read by :func:`rbc.ir.bundle.read_bundle` (structure, content SHA-256, the
    flat model's layout) and the flat model checked against its record
    (:meth:`CompiledModel.from_data`); every embedded member bundle goes through the same
    checks (:func:`rbc.ir.bundle.read_embedded_bundle`) and must match its stored SHA-256;
    the flat record must be exactly the members' records side by side (so the member maps
    are the flat model's); then ``/composition`` is checked for layout, index ranges and
    consistency (links between flat bodies, modes naming known supports and links, G's
    structure splitting the level-1 speeds, the mode partition being the composer's).

    Raises:
        BundleError: not a bundle, not a composed bundle, another layout version, or any
            inconsistency (naming the file and the dataset).
    """
    path = data.file
    if not is_composed(data):
        raise BundleError(f"{path}: not a composed bundle (no /composition; write one with "
                          "`rbc compose`)")
    layout = data.attrs.get(GROUP, {}).get("layout")
    if np.ndim(layout) != 0 or layout != COMPOSITION_BUNDLE:  # untrusted: any type
        raise BundleError(f"{path}: /composition layout {layout!r} is not supported (this rbc "
                          f"reads {COMPOSITION_BUNDLE})")
    flat = CompiledModel.from_data(data)
    names = data.strings(f"{GROUP}/member_names")
    link_names = data.strings(f"{GROUP}/links/name")
    check_layout(data, GROUP, LAYOUT, {"K": len(names), "L": len(link_names)})
    models = []
    for name in names:
        g = f"{GROUP}/members/{name}"
        check_layout(data, g, MEMBER_LAYOUT, {})
        where = f"{path}:{g}"
        raw = data.array(f"{g}/bundle").astype(np.uint8).tobytes()
        digest = data.attrs.get(g, {}).get("sha256")  # untrusted: any attribute type
        if not isinstance(digest, str) or hashlib.sha256(raw).hexdigest() != digest:
            raise data.error(f"{g}/bundle", "the embedded member bundle does not match its "
                             "@sha256")
        model = CompiledModel.from_data(read_embedded_bundle(raw, where))
        part_name = data.attrs.get(g, {}).get("partition")
        if not isinstance(part_name, str) or part_name not in model.partitions:
            raise data.error(f"{g}@partition", f"{part_name!r} is not a partition of the "
                             "member bundle")
        models.append((name, model, model.partitions[part_name],
                       _pose(data, f"{g}/placement", data.array(f"{g}/placement"))))
    want = flat_record(flat.record.name, [(n, m.record) for n, m, _, _ in models],
                       source=flat.record.source)
    if want != flat.record:
        raise data.error("/record/text", "the flat record is not the embedded members' "
                         "records side by side")
    members = tuple(member_map(flat, n, m, part, sp.se3_from_pose(x))
                    for n, m, part, x in models)
    lg = f"{GROUP}/links"
    bodies = flat.record.body_index()
    links, types = {}, {}
    for i, n in enumerate(link_names):
        t = data.strings(f"{lg}/type")[i]
        a, b = data.strings(f"{lg}/a_body")[i], data.strings(f"{lg}/b_body")[i]
        if t not in LINK_TYPES or a not in bodies or b not in bodies or a == b or n in links:
            raise data.error(lg, f"link {n!r}: type {t!r} (ball | weld) between two different "
                             "bodies of the flat record, names unique")
        fa, fb = data.array(f"{lg}/a_frame")[i], data.array(f"{lg}/b_frame")[i]
        links[n] = link_joint(n, LINK_TYPES[t], a, _pose(data, f"{lg}/a_frame", fa),
                              b, _pose(data, f"{lg}/b_frame", fb))
        types[n] = t
    modes = {name: _mode(data, flat, links, name, len(names))
             for name in data.strings(f"{GROUP}/mode_names")}
    if not modes:
        raise data.error(f"{GROUP}/mode_names", "a composition has at least one mode")
    attrs = data.attrs.get(GROUP, {})
    return Composition(str(attrs.get("name", "")), str(attrs.get("source", "")), flat,
                       members, links, types, modes, flat.partitions.get("default"), None,
                       data.text(f"{GROUP}/text"))


__all__ = ["MemberMap", "composed_bundle", "is_composed", "load", "open_mode", "write_composed"]
