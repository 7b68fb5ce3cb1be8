"""Summary of a compiled bundle: the facts ``rbc inspect`` prints (stable ``--json`` keys).

Keys (documented in docs/cli.md): ``name``, ``bodies``, ``joints``, ``components``,
``cycle_rank``, ``tree_joints``, ``cut_joints``, ``chords`` (list of ``{joint, path_length,
lca}``), ``path_families`` (common-endpoint families: list of ``{side, endpoint, chords,
paths, comparisons, all_pairs, shared, saving}``, :func:`rbc.ir.paths.path_families`),
``path_factors`` (``{total, evaluated}``: factor products per residual evaluation without
and with each family's shared stretch composed once), ``modules`` (list of ``{chords,
couplings, size, variables}`` — ``size`` is the number of residual rows), ``nq``, ``nv``,
``nq_tree``, ``nv_tree``, ``actuators``,
``partitions`` (list of ``{name, rank, independent (joint names), speeds,
largest_block}``), ``modes`` (list of ``{name, supports, closure_rank (on the tree speeds),
rank (of the mode's closure Jacobian), speeds, independent, actuation_rank, modules,
largest_block}``; empty
without support modes), ``mode_notes`` (support sets left out by ``--modes all`` and why),
``supports`` (list of ``{name, body, kind, friction}``), ``provenance``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rbc.ir.bundle import BundleData, groups_under, read_bundle
from rbc.ir.paths import path_families


def _groups(ptr: np.ndarray, flat: np.ndarray) -> list[list[int]]:
    return [flat[ptr[i]: ptr[i + 1]].tolist() for i in range(len(ptr) - 1)]


def _composition(d: BundleData) -> dict | None:
    """The ``composition`` key of a composed bundle (None for an ordinary bundle; the group
    is checked by :func:`rbc.compose.bundle.load`, read here with typed access only)."""
    g = "/composition"
    if not any(k.startswith(g + "/") for k in d.datasets):
        return None
    attrs = d.attrs.get(g, {})

    def member(n: str) -> dict:
        a = d.attrs.get(f"{g}/members/{n}", {})
        return {"name": n, **{k: str(a.get(src, "")) for k, src in (
            ("bundle", "bundle"), ("record", "record_name"), ("partition", "partition"),
            ("sha256", "sha256"))}}

    cols = [d.strings(f"{g}/links/{k}") for k in ("name", "type", "a_body", "b_body")]
    if len({len(c) for c in cols}) > 1:
        raise d.error(f"{g}/links", "the link lists (name, type, a_body, b_body) differ in "
                      "length")
    links = [{"name": n, "type": t, "a": a, "b": b} for n, t, a, b in zip(*cols, strict=True)]
    modes = []
    for n in d.strings(f"{g}/mode_names"):
        m = f"{g}/modes/{n}"
        modes.append({"name": n, "supports": d.strings(f"{m}/supports"),
                      "links": d.strings(f"{m}/links"),
                      "bodies": int(d.number(m, "n_bodies")),
                      "chords": int(d.number(m, "n_chords")),
                      "member_chords": int(d.number(m, "member_chords")),
                      "level1_speeds": int(d.number(m, "level1_speeds")),
                      "speeds": int(d.number(m, "speeds")),
                      "level2_rank": int(d.array(f"{m}/level2/rows").size),
                      "independent": d.strings(f"{m}/partition/joints")})
    return {"name": str(attrs.get("name", "")), "source": str(attrs.get("source", "")),
            "members": [member(n) for n in d.strings(f"{g}/member_names")], "links": links,
            "modes": modes}


def _families(d: BundleData, chord_names: list[str], edge_name: list[str], bodies: list[str]
              ) -> tuple[list[dict], dict]:
    """The path families of the stored closure paths and the factor counts they save."""
    ptr, pe, ps = (d.array(f"/chords/path_{k}") for k in ("ptr", "edge", "sign"))
    paths = [tuple(zip(pe[ptr[i]:ptr[i + 1]].tolist(), ps[ptr[i]:ptr[i + 1]].tolist(),
                       strict=True)) for i in range(len(chord_names))]
    chord_edge = d.array("/chords/edge")
    end = {"suffix": d.array("/graph/child"), "prefix": d.array("/graph/parent")}
    world = len(bodies)
    fams = path_families(paths)
    out = []
    for f in fams:
        v = int(end[f.side][int(chord_edge[f.chords[0]])])
        out.append({"side": f.side, "endpoint": "world" if v == world else bodies[v],
                    "chords": [chord_names[i] for i in f.chords], "paths": f.n_paths,
                    "comparisons": f.n_paths - 1, "all_pairs": f.n_paths * (f.n_paths - 1) // 2,
                    "shared": [edge_name[k] for k, _ in f.shared], "saving": f.saving})
    total = sum(len(p) for p in paths)
    return out, {"total": total, "evaluated": total - sum(f.saving for f in fams)}


def summarize(path: str | Path) -> dict:
    """Read a bundle (:func:`rbc.ir.bundle.read_bundle`: untrusted, fully checked) and
    return its summary dictionary.

    Raises:
        BundleError: the file is missing, not a bundle, of another schema version, or
            corrupted or tampered.
    """
    d = read_bundle(path)
    meta = d.attrs.get("/meta", {})
    n_joints = int(d.number("/graph", "n_joints"))
    edge_name = d.strings("/graph/edge_name")
    bodies = d.strings("/bodies/name")
    world = len(bodies)
    tree = [int(k) for k in d.array("/forest/tree_edges") if k < n_joints]
    chord_edges = d.array("/chords/edge").tolist()
    chord_names = d.strings("/chords/name")
    ptr = d.array("/chords/path_ptr")
    lca = d.array("/chords/lca")
    chords_of = _groups(d.array("/modules/chords_ptr"), d.array("/modules/chords"))
    couplings_of = _groups(d.array("/modules/couplings_ptr"), d.array("/modules/couplings"))
    edges_of = _groups(d.array("/modules/edges_ptr"), d.array("/modules/edges"))
    coupling_names = d.strings("/interfaces/couplings/name")
    v_off, nv = d.array("/coordinates/v_offset"), d.array("/graph/nv")
    families, factors = _families(d, chord_names, edge_name, bodies)
    partitions = []
    for name in groups_under(d, "/partitions"):
        g = f"/partitions/{name}"
        dep = set(d.array(f"{g}/dependent").tolist())
        block = [sum(1 for k in es for j in range(v_off[k], v_off[k] + nv[k]) if j in dep)
                 for es in edges_of]
        partitions.append({"name": name, "rank": int(d.number(g, "rank")),
                           "independent": d.strings(f"{g}/joints"),
                           "speeds": int(d.array(f"{g}/independent").shape[0]),
                           "largest_block": max(block, default=0)})
    modes = []
    for name in groups_under(d, "/modes"):
        g = f"/modes/{name}"
        modes.append({"name": name, "supports": d.strings(f"{g}/supports"),
                      "closure_rank": int(d.number(g, "tree_rank")),
                      "rank": int(d.number(g, "rank")),
                      "speeds": int(d.array(f"{g}/independent").shape[0]),
                      "independent": d.strings(f"{g}/joints"),
                      "actuation_rank": int(d.number(g, "actuation_rank")),
                      "modules": int(d.number(g, "modules")),
                      "largest_block": int(d.number(g, "largest_block"))})
    notes = d.strings("/modes/notes") if d.has("/modes/notes") else []
    supports = [{"name": n, "body": bodies[int(b)], "kind": k, "friction": float(mu)}
                for n, k, b, mu in zip(d.strings("/interfaces/supports/name"),
                                       d.strings("/interfaces/supports/kind"),
                                       d.array("/interfaces/supports/body"),
                                       d.array("/interfaces/supports/friction"), strict=True)
                ] if d.has("/interfaces/supports/name") else []
    actuators = d.strings("/interfaces/actuators/name")
    act_edges = d.array("/interfaces/actuators/edge").tolist()
    if d.has("/interfaces/actuators/terms_ptr"):  # tendon ports: {joint: coefficient}
        tp, te = d.array("/interfaces/actuators/terms_ptr"), d.array(
            "/interfaces/actuators/terms_edge")
        tc = d.array("/interfaces/actuators/terms_coef")
        act_terms = [{edge_name[int(te[n])]: float(tc[n]) for n in range(tp[i], tp[i + 1])}
                     for i in range(len(actuators))]
    else:
        act_terms = [{edge_name[k]: 1.0} for k in act_edges]
    act_kind = d.strings("/interfaces/actuators/kind")  # joint|tendon|distance|profile|velocity
    act_port = d.strings("/interfaces/actuators/port")
    return {
        "name": str(meta.get("record_name", "")),
        "composition": _composition(d),
        "bodies": bodies,
        "joints": edge_name[:n_joints],
        "components": int(d.number("/graph", "components")),
        "cycle_rank": int(d.number("/graph", "cycle_rank")),
        "tree_joints": [edge_name[k] for k in tree],
        "cut_joints": [edge_name[k] for k in chord_edges],
        "declared_cuts": [edge_name[int(k)] for k in d.array("/forest/declared_cuts")],
        "forced_cuts": [edge_name[int(k)] for k in d.array("/forest/forced_cuts")],
        "chords": [
            {"joint": chord_names[i], "path_length": int(ptr[i + 1] - ptr[i]),
             "lca": "world" if lca[i] == world else bodies[lca[i]]}
            for i in range(len(chord_names))
        ],
        "path_families": families,
        "path_factors": factors,
        "modules": [
            {"chords": [chord_names[c] for c in ch],
             "couplings": [coupling_names[c] for c in co],
             "size": int(r), "variables": int(v)}
            for ch, co, r, v in zip(chords_of, couplings_of, d.array("/modules/rows"),
                                    d.array("/modules/variables"), strict=True)
        ],
        "nq": int(d.number("/coordinates", "nq")),
        "nv": int(d.number("/coordinates", "nv")),
        "nq_tree": int(d.number("/coordinates", "nq_tree")),
        "nv_tree": int(d.number("/coordinates", "nv_tree")),
        "actuators": [{"name": a, "joint": edge_name[k] if k >= 0 else None, "terms": t,
                       "kind": kd, "port": pt}
                      for a, k, t, kd, pt in zip(actuators, act_edges, act_terms, act_kind,
                                                 act_port, strict=True)],
        "partitions": partitions,
        "modes": sorted(modes, key=lambda m: (len(m["supports"]), m["name"])),
        "mode_notes": notes,
        "supports": supports,
        "provenance": {k: str(meta.get(k, "")) for k in (
            "record_source", "record_sha256", "rbc_version", "numpy_version",
            "pinocchio_version", "mujoco_version")},
    }
