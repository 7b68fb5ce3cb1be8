"""Pass ``codegen``: partitions and modules (and all before them) → bundle data (DESIGN.md §7).

Produces the in-memory :class:`~rbc.ir.bundle.BundleData`; writing it to disk is the
driver's job (:func:`rbc.ir.bundle.write_bundle`, atomic). The layout is documented in
``docs/bundle.md``. Partitions are
computed by the ``rank`` pass and written under ``/partitions/<name>``).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from importlib import metadata
from typing import ClassVar

import numpy as np

import rbc
from rbc.ir.bundle import BUNDLE_SCHEMA, BundleData
from rbc.ir.derived import csr, record_datasets
from rbc.ir.record import Record, coordinate_names
from rbc.model.modes import model_for
from rbc.passes.base import check
from rbc.passes.rank import Partitioned


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def normalized_record(record: Record) -> str:
    """The record IR as canonical JSON (SI units, quaternions, defaults filled in)."""
    data = _plain(record)
    data.pop("text", None)
    return json.dumps(data, sort_keys=True, default=str)


_FIELDS: dict[type, tuple[str, ...]] = {}
_LEAVES = frozenset({float, int, str, bool, type(None)})


def _plain(x):
    """``dataclasses.asdict`` for the JSON above (dataclasses → dicts, lists and tuples →
    lists, dicts → dicts, everything else as is) without asdict's deep copy and call per
    leaf (a 1000-loop record has ~240 000 objects, most of them floats)."""
    leaves = _LEAVES
    t = type(x)
    if t in leaves:
        return x
    if t is tuple or t is list:
        return [v if type(v) in leaves else _plain(v) for v in x]
    fields = _FIELDS.get(t)
    if fields is None and dataclasses.is_dataclass(x) and not isinstance(x, type):
        fields = _FIELDS[t] = tuple(f.name for f in dataclasses.fields(x))
    if fields is not None:
        out = {}
        for name in fields:
            v = getattr(x, name)
            out[name] = v if type(v) in leaves else _plain(v)
        return out
    if isinstance(x, list | tuple):  # subclasses (named tuples)
        return [_plain(v) for v in x]
    if isinstance(x, dict):
        return {_plain(k): _plain(v) for k, v in x.items()}
    return x


def put_partition(out: BundleData, grp: str, p) -> None:
    """The datasets and attributes of one partition (``/partitions/<name>``, and the
    partition of a mode under ``/modes/<name>``; docs/bundle.md)."""
    out.attr(grp, rank=p.rank, length_scale=p.length_scale)
    out.put(f"{grp}/independent", p.independent)
    out.put(f"{grp}/dependent", p.dependent)
    out.put(f"{grp}/rows", p.rows)
    out.put(f"{grp}/q_ref", p.q_ref)
    out.put(f"{grp}/joints", list(p.joints))


@dataclass(frozen=True)
class Codegen:
    """Assemble the bundle datasets from the compiled IR."""

    name: ClassVar[str] = "codegen"

    def run(self, parted: Partitioned) -> BundleData:
        mods = parted.modules
        cp = mods.paths
        f = cp.forest
        g = f.graph
        rec = g.record
        out = BundleData()
        out.attr(
            "/meta",
            bundle_schema=BUNDLE_SCHEMA,
            rbc_version=rbc.__version__,
            record_name=rec.name,
            record_source=rec.source,
            record_sha256=rec.sha256,
            numpy_version=_version("numpy"),
            pinocchio_version=_version("pin"),
            mujoco_version=_version("mujoco"),
            h5py_version=_version("h5py"),
            spatial_vector_order="angular-first [w; v], [n; f]",
            quaternion_order="w x y z",
            transform_convention="T_a_b maps coordinates in frame b to frame a",
            units="SI (m, kg, s, N, N*m, rad)",
        )
        out.put("/record/text", rec.text)
        out.put("/record/normalized", normalized_record(rec))

        out.put("/bodies/name", list(g.body_names))
        out.attr("/graph", n_bodies=g.n_bodies, n_joints=g.n_joints, world=g.world,
                 components=g.components, cycle_rank=g.cycle_rank)
        out.put("/graph/edge_name", list(g.edge_names))
        out.put("/graph/edge_type", list(g.edge_types))
        for name in ("parent", "child", "nq", "nv", "keep", "prefer_cut", "component"):
            out.put(f"/graph/{name}", getattr(g, name))
        out.put("/forest/tree_edges", np.array(f.tree_edges, dtype=np.int64))
        out.put("/forest/chords", np.array(f.chords, dtype=np.int64))
        out.put("/forest/forced_cuts", np.array(f.forced_cuts, dtype=np.int64))
        out.put("/forest/declared_cuts", np.array(f.declared_cuts, dtype=np.int64))
        for name in ("parent_edge", "parent_vertex", "depth", "sign"):
            out.put(f"/forest/{name}", getattr(f, name))

        ptr, edge, sign = cp.csr()
        out.put("/chords/edge", np.array([p.chord for p in cp.paths], dtype=np.int64))
        out.put("/chords/name", [p.name for p in cp.paths])
        out.put("/chords/b", np.array([p.b for p in cp.paths], dtype=np.int64))
        out.put("/chords/c", np.array([p.c for p in cp.paths], dtype=np.int64))
        out.put("/chords/lca", np.array([p.lca for p in cp.paths], dtype=np.int64))
        out.put("/chords/path_ptr", ptr)
        out.put("/chords/path_edge", edge)
        out.put("/chords/path_sign", sign)

        for name in ("chords", "couplings", "edges", "inputs"):
            p, flat = csr([getattr(m, name) for m in mods.modules])
            out.put(f"/modules/{name}_ptr", p)
            out.put(f"/modules/{name}", flat)
        out.put("/modules/rows", np.array([m.rows for m in mods.modules], dtype=np.int64))
        out.put("/modules/variables",
                np.array([m.variables for m in mods.modules], dtype=np.int64))

        q_names: list[str] = [""] * f.nq
        v_names: list[str] = [""] * f.nv
        for k in range(g.n_edges):
            qn, vn = coordinate_names(g.edge_types[k], g.edge_names[k])
            q_names[f.q_slice(k)] = qn
            v_names[f.v_slice(k)] = vn
        out.attr("/coordinates", nq=f.nq, nv=f.nv, nq_tree=f.nq_tree, nv_tree=f.nv_tree)
        out.put("/coordinates/q_offset", f.q_offset)
        out.put("/coordinates/v_offset", f.v_offset)
        out.put("/coordinates/q_name", q_names)
        out.put("/coordinates/v_name", v_names)
        out.attr("/partitions", count=len(parted.partitions))
        for p in parted.partitions:
            put_partition(out, f"/partitions/{p.name}", p)
        if parted.modes:
            out.attr("/modes", count=len(parted.modes))
            out.put("/modes/notes", list(parted.mode_notes))
        for m in parted.modes:
            grp = f"/modes/{m.name}"
            put_partition(out, grp, m.partition)
            mm = model_for(parted.model, m)
            dep = set(m.partition.dependent.tolist())
            out.attr(grp, tree_rank=m.tree_rank, actuation_rank=m.actuation_rank,
                     root_inputs=m.root_inputs, nq=mm.nq, nv=mm.nv, modules=len(mm.modules),
                     largest_block=max((sum(1 for j in b.cols if j in dep) for b in mm.blocks),
                                       default=0))
            out.put(f"{grp}/supports", list(m.supports))
            out.put(f"{grp}/anchors", m.anchors)

        for path, value in record_datasets(rec, g.n_edges).items():  # bodies, geometry,
            out.put(path, value)  # interfaces: checked against the record when read
        return out

    def verify(self, data: BundleData) -> None:
        for key in ("/record/text", "/graph/edge_name", "/forest/tree_edges", "/chords/path_ptr",
                    "/modules/rows", "/coordinates/q_name"):
            check(key in data.datasets, self.name, f"dataset {key} is written")
        check(data.attrs["/meta"]["bundle_schema"] == BUNDLE_SCHEMA, self.name, "schema stamped")
