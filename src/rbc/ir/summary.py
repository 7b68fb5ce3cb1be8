"""Summary of a compiled bundle: the facts ``rbc inspect`` prints (stable ``--json`` keys).

Keys (documented in docs/cli.md): ``name``, ``bodies``, ``joints``, ``components``,
``cycle_rank``, ``tree_joints``, ``cut_joints``, ``chords`` (list of ``{joint, path_length,
lca}``), ``modules`` (list of ``{chords, couplings, size, variables}`` — ``size`` is the
number of residual rows), ``nq``, ``nv``, ``nq_tree``, ``nv_tree``, ``actuators``,
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

from rbc.ir.bundle import open_bundle, strings


def _groups(ptr: np.ndarray, flat: np.ndarray) -> list[list[int]]:
    return [flat[ptr[i]: ptr[i + 1]].tolist() for i in range(len(ptr) - 1)]


def summarize(path: str | Path) -> dict:
    """Read a bundle and return its summary dictionary.

    Raises:
        BundleError: the file is missing, not a bundle, or of another schema version.
    """
    with open_bundle(path) as h5:
        meta = dict(h5["meta"].attrs)
        graph = h5["graph"]
        n_joints = int(graph.attrs["n_joints"])
        edge_name = strings(graph["edge_name"])
        bodies = strings(h5["bodies/name"])
        world = len(bodies)
        tree = [int(k) for k in h5["forest/tree_edges"][()] if k < n_joints]
        chord_edges = h5["chords/edge"][()].tolist()
        chord_names = strings(h5["chords/name"])
        ptr = h5["chords/path_ptr"][()]
        lca = h5["chords/lca"][()]
        mods = h5["modules"]
        chords_of = _groups(mods["chords_ptr"][()], mods["chords"][()])
        couplings_of = _groups(mods["couplings_ptr"][()], mods["couplings"][()])
        coupling_names = strings(h5["interfaces/couplings/name"])
        coords = dict(h5["coordinates"].attrs)
        partitions = []
        for name, grp in h5.get("partitions", {}).items():
            dep = set(grp["dependent"][()].tolist())
            v_off, nv = h5["coordinates/v_offset"][()], h5["graph/nv"][()]
            edges_of = _groups(mods["edges_ptr"][()], mods["edges"][()])
            block = [sum(1 for k in es for j in range(v_off[k], v_off[k] + nv[k]) if j in dep)
                     for es in edges_of]
            partitions.append({"name": name, "rank": int(grp.attrs["rank"]),
                               "independent": strings(grp["joints"]),
                               "speeds": int(grp["independent"].shape[0]),
                               "largest_block": max(block, default=0)})
        modes = [{"name": name, "supports": strings(grp["supports"]),
                  "closure_rank": int(grp.attrs["tree_rank"]), "rank": int(grp.attrs["rank"]),
                  "speeds": int(grp["independent"].shape[0]),
                  "independent": strings(grp["joints"]),
                  "actuation_rank": int(grp.attrs["actuation_rank"]),
                  "modules": int(grp.attrs["modules"]),
                  "largest_block": int(grp.attrs["largest_block"])}
                 for name, grp in h5.get("modes", {}).items() if hasattr(grp, "keys")]
        notes = strings(h5["modes/notes"]) if "modes/notes" in h5 else []
        sup = h5.get("interfaces/supports")
        supports = [] if sup is None else [
            {"name": n, "body": bodies[int(b)], "kind": k, "friction": float(mu)}
            for n, k, b, mu in zip(strings(sup["name"]), strings(sup["kind"]), sup["body"][()],
                                   sup["friction"][()], strict=True)]
        actuators = strings(h5["interfaces/actuators/name"])
        act_edges = h5["interfaces/actuators/edge"][()].tolist()
        acts = h5["interfaces/actuators"]
        if "terms_ptr" in acts:  # tendon ports: {joint: coefficient}
            tp, te, tc = acts["terms_ptr"][()], acts["terms_edge"][()], acts["terms_coef"][()]
            act_terms = [{edge_name[int(te[n])]: float(tc[n]) for n in range(tp[i], tp[i + 1])}
                         for i in range(len(actuators))]
        else:
            act_terms = [{edge_name[k]: 1.0} for k in act_edges]
        return {
            "name": str(meta["record_name"]),
            "bodies": bodies,
            "joints": edge_name[:n_joints],
            "components": int(graph.attrs["components"]),
            "cycle_rank": int(graph.attrs["cycle_rank"]),
            "tree_joints": [edge_name[k] for k in tree],
            "cut_joints": [edge_name[k] for k in chord_edges],
            "chords": [
                {"joint": chord_names[i], "path_length": int(ptr[i + 1] - ptr[i]),
                 "lca": "world" if lca[i] == world else bodies[lca[i]]}
                for i in range(len(chord_names))
            ],
            "modules": [
                {"chords": [chord_names[c] for c in ch],
                 "couplings": [coupling_names[c] for c in co],
                 "size": int(r), "variables": int(v)}
                for ch, co, r, v in zip(chords_of, couplings_of, mods["rows"][()],
                                        mods["variables"][()], strict=True)
            ],
            "nq": int(coords["nq"]),
            "nv": int(coords["nv"]),
            "nq_tree": int(coords["nq_tree"]),
            "nv_tree": int(coords["nv_tree"]),
            "actuators": [{"name": a, "joint": edge_name[k] if k >= 0 else None, "terms": t}
                          for a, k, t in zip(actuators, act_edges, act_terms, strict=True)],
            "partitions": partitions,
            "modes": sorted(modes, key=lambda m: (len(m["supports"]), m["name"])),
            "mode_notes": notes,
            "supports": supports,
            "provenance": {k: str(meta[k]) for k in (
                "record_source", "record_sha256", "rbc_version", "numpy_version",
                "pinocchio_version", "mujoco_version")},
        }
