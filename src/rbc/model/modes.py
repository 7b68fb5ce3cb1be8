"""Support modes: named sets of active supports, each support a closure to the world
(DESIGN.md §10; docs/supports.md).

**Support closures as chords.** An active support s on body c is one more cut joint
``s.support`` from the world to c, with ``A = T_world_anchor`` (the anchor: the world pose of
the support frame when the support became active — a run-time parameter) and
``B = T_c_support`` (the record's support frame). A ``surface`` support is a ``fixed`` cut
joint (6 rows: the sole's pose is held); a ``point`` support is a ``spherical`` cut joint
(its origin is held, the foot may turn: of its 6 rows, 3 are absorbed by the cut joint's own
massless coordinates, which start at the identity because the anchor's orientation is the
support frame's at activation). Its closure path is the tree path from the world down to c.
So a mode's model is the base model plus chords (:meth:`CompiledModel.with_chords`), and
every closure algorithm, reference and plant handles supports as it handles loops (the
flat-array kernels see one more chord to the world).

**Modules.** A support's candidate dependent edges are the edges on its path with
coordinates, floating roots excepted, plus its own cut joint: with the root an *input*,
every stance leg of a quadruped is its own module (moving one foot re-solves one leg).
Modules sharing a candidate with a support block (or having it as an input) are merged
with it. If the legs cannot absorb the support rows (the rank analysis then needs root
coordinates as dependent), the roots become candidates and the supports that reach them
form one module (:attr:`ModeInfo.root_inputs` is then False).

**Rank analysis per mode** (:func:`analyse_mode`): :func:`rbc.model.partition.partition_at`
on the mode model at the reference configuration, dependent columns chosen among passive
coordinates first, then actuated ones, floating roots last — so the base twist stays
independent whenever the legs can absorb the supports. The **closure rank on the tree
speeds** is ``nv_tree − n_u`` (6/9/12 for a quadruped on 2/3/4 point feet). A mode is
**fully actuated** when its independent speeds are all driven: ``rank(L) = n_u`` with
``L = J_ℓ E`` (then the feedforward ``Lᵀ f = τ`` is solvable exactly; a one-foot stance of a
quadruped is not). ``--modes all`` keeps ``free`` and every non-empty support set whose rank
analysis succeeds and whose independent speeds do not outnumber the actuators
(``n_u ≤ n_act``, necessary for every independent speed to be driven); the actuation rank
``rank(J_ℓ E)`` is stored and reported, so a mode with an undriven direction is visible (a
quadruped on two point feet tips freely about the line through them: rank 11 of 12).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pinocchio as pin

from rbc.errors import CompileError, UsageError, did_you_mean
from rbc.ir import spatial as sp
from rbc.ir.bundle import group_name_problem
from rbc.ir.record import Joint, Pose, Support
from rbc.ir.unionfind import UnionFind
from rbc.model.compiled import CompiledModel, ModeInfo, ModuleInfo, Partition
from rbc.model.kinematics import body_poses, tree_path
from rbc.model.partition import lift, partition_at, preferred_independent

#: Name of the mode without supports.
FREE = "free"
#: Suffix of a support's cut-joint (edge) name.
SUPPORT_EDGE = ".support"
#: Cut-joint type of each support kind.
SUPPORT_JOINT = {"point": "spherical", "surface": "fixed"}
#: ``--modes all`` enumerates 2ⁿ − 1 support sets; beyond this many supports the
#: enumeration (and the bundle) would be unreasonably large.
MAX_ENUMERATED_SUPPORTS = 12
#: Relative singular-value threshold of the actuation test ``rank(L) = n_u`` (the rank
#: tolerance of the partition, docs/kinematics.md).
ACTUATION_RTOL = 1e-9


def mode_name(supports: Sequence[str]) -> str:
    """The default name of a support set: ``free`` or the names joined by ``+``."""
    return "+".join(supports) if supports else FREE


def support_joint(support: Support, anchor: pin.SE3) -> Joint:
    """The cut joint closing ``support`` to the world at ``anchor`` (``T_world_anchor``)."""
    return Joint(name=support.name + SUPPORT_EDGE, type=SUPPORT_JOINT[support.kind],
                 parent="world", child=support.body, parent_frame=sp.pose_from_se3(anchor),
                 child_frame=support.pose)


def support_poses(model: CompiledModel, q: np.ndarray, supports: Sequence[str]
                  ) -> list[pin.SE3]:
    """World poses ``T_world_support`` of the named supports at q (through the tree)."""
    rec = model.record
    by_name = {s.name: s for s in rec.supports}
    T = body_poses(model, q)
    index = rec.body_index()
    return [T[index[by_name[n].body]] * sp.se3_from_pose(by_name[n].pose) for n in supports]


def anchors_array(anchors: Sequence[pin.SE3]) -> np.ndarray:
    """(k, 7) ``[x y z qw qx qy qz]`` of anchor poses (the bundle's layout)."""
    return np.array([[*T.translation, *sp.quat_from_rotation(T.rotation)] for T in anchors],
                    dtype=float).reshape(-1, 7)


def anchors_se3(anchors: np.ndarray) -> list[pin.SE3]:
    """Inverse of :func:`anchors_array`."""
    return [sp.se3_from_pose(Pose(tuple(a[:3]), tuple(a[3:])))
            for a in np.asarray(anchors, dtype=float).reshape(-1, 7)]


def check_supports(model: CompiledModel, supports: Sequence[str], what: str) -> tuple[str, ...]:
    """The named supports in record order.

    Raises:
        UsageError: an unknown or repeated support name (lists the record's supports).
    """
    known = [s.name for s in model.record.supports]
    for n in supports:
        if n not in known:
            hint = did_you_mean(n, known)
            raise UsageError(f"{what}: unknown support '{n}'"
                             + (f" (did you mean '{hint}'?)" if hint else "")
                             + "; supports of the record: " + (", ".join(known) or "none"))
    twice = sorted({n for n in supports if list(supports).count(n) > 1})
    if twice:
        raise UsageError(f"{what}: support(s) {', '.join(twice)} listed twice")
    return tuple(n for n in known if n in set(supports))


def mode_modules(model: CompiledModel, paths: Sequence[tuple[tuple[int, int], ...]],
                 chord_edges: Sequence[int], root_inputs: bool) -> tuple[ModuleInfo, ...]:
    """The modules of a mode model (module docstring).

    Args:
        model: the base model (its modules cover its own chords and couplings).
        paths, chord_edges: the support chords' paths and edge indices in the mode model.
        root_inputs: keep floating roots out of the support candidates.
    """
    base, n0 = model.modules, model.n_chords
    roots = {k for k, n in enumerate(model.edge_names) if n.endswith(".root")}
    # per unit: (chords, couplings, candidate edges, touched edges)
    units: list[tuple[set[int], set[int], set[int], set[int]]] = []
    for m in base:
        units.append((set(m.chords), set(m.couplings), set(m.edges), {*m.edges, *m.inputs}))
    for i, (path, e) in enumerate(zip(paths, chord_edges, strict=True)):
        moving = {k for k, _ in path if model.kinds[k].nv}
        cands = {e} | {k for k in moving if not (root_inputs and k in roots)}
        units.append(({n0 + i}, set(), cands, moving | {e}))
    sets = UnionFind(len(units))
    for a in range(len(base), len(units)):
        for b in range(len(units)):
            if a != b and (units[a][2] & units[b][3] or units[a][3] & units[b][2]):
                sets.union(a, b)
    groups: dict[int, list[int]] = {}
    for n in range(len(units)):
        groups.setdefault(sets.find(n), []).append(n)
    n_chords = n0 + len(chord_edges)

    def first(members: list[int]) -> int:
        chords = [c for n in members for c in units[n][0]]
        return min(chords) if chords else n_chords + min(c for n in members for c in units[n][1])

    out = []
    for members in sorted(groups.values(), key=first):
        chords = sorted(c for n in members for c in units[n][0])
        coup = sorted(c for n in members for c in units[n][1])
        cands = set().union(*(units[n][2] for n in members))
        touched = set().union(*(units[n][3] for n in members))
        out.append(ModuleInfo(tuple(chords), tuple(coup), tuple(sorted(cands)),
                              tuple(sorted(touched - cands))))
    return tuple(out)


def mode_model(model: CompiledModel, supports: Sequence[str],
               anchors: Sequence[pin.SE3] | None = None, *, root_inputs: bool = True,
               partition: Partition | None = None) -> CompiledModel:
    """The model of a support mode: the base model plus one chord to the world per support.

    Args:
        model: the base model (from a bundle or the compiler).
        supports: active support names, in record order.
        anchors: ``T_world_anchor`` per support (default: the support poses at the base
            model's reference configuration ``default`` partition ``q_ref``).
        root_inputs: module rule (module docstring).
        partition: stored on the result under its name (e.g. the mode's partition).

    Returns:
        The mode model; ``model.supports`` names the supports of its last chords.
    """
    by_name = {s.name: s for s in model.record.supports}
    if anchors is None:
        anchors = support_poses(model, reference_q(model), supports)
    joints = tuple(support_joint(by_name[n], T) for n, T in zip(supports, anchors, strict=True))
    clash = [j.name for j in joints if j.name in set(model.edge_names)]
    if clash:
        raise CompileError(f"{model.record.source}: support cut joint name(s) {', '.join(clash)} "
                           "clash with joints of the record; rename the support")
    paths = tuple(tuple(tree_path(model, model.record.body_index()[by_name[n].body]))
                  for n in supports)
    E = len(model.kinds)
    edges = tuple(range(E, E + len(joints)))
    mods = mode_modules(model, paths, edges, root_inputs)
    out = model.with_chords(joints, paths, mods, tuple(supports))
    if partition is not None:
        from dataclasses import replace

        out = replace(out, partitions={partition.name: partition})
    return out


def reference_q(model: CompiledModel) -> np.ndarray:
    """The base model's reference configuration (its ``default`` partition's ``q_ref``, or
    the first stored one; the record's initial guesses if none is stored)."""
    part = model.partitions.get("default") or next(iter(model.partitions.values()), None)
    return np.asarray(part.q_ref if part is not None else model.initial_configuration())


def extend_configuration(base: CompiledModel, mode: CompiledModel, q: np.ndarray) -> np.ndarray:
    """A base configuration (nq_base,) extended to the mode model's layout: the support cut
    joints' coordinates at the identity (anchored at the current support poses)."""
    out = np.empty(mode.nq)
    out[: base.nq] = q
    for k in range(len(base.kinds), len(mode.kinds)):
        out[mode.q_slice(k)] = mode.kinds[k].neutral()
    return out


def _tiers(mode: CompiledModel) -> tuple[set[int], set[int]]:
    """``(preferred, last)`` v-columns: actuated/requested joints, then floating roots."""
    roots = set()
    for k, (n, t) in enumerate(zip(mode.edge_names, mode.edge_types, strict=True)):
        if n.endswith(".root") and t == "free":
            roots.update(range(mode.v_slice(k).start, mode.v_slice(k).stop))
    return preferred_independent(mode) - roots, roots


def actuation_rank(mode: CompiledModel, part: Partition, q: np.ndarray) -> int:
    """``rank(J_ℓ E)`` at q: how many independent directions the actuators drive."""
    if part.independent.size == 0 or not mode.record.actuators:
        return 0
    from rbc.model.interfaces import actuator_map

    s = np.linalg.svd(actuator_map(mode, lift(mode, part, q).E, q), compute_uv=False)
    return int(np.sum(s > ACTUATION_RTOL * s[0])) if s.size and s[0] > 0 else 0


def analyse_mode(model: CompiledModel, name: str, supports: Sequence[str],
                 length: float | None = None) -> ModeInfo:
    """Rank analysis of one support mode at the base model's reference configuration.

    Raises:
        CompileError: the supports leave no valid partition (the message says why).
    """
    q_base = reference_q(model)
    anchors = support_poses(model, q_base, supports)
    last_err: CompileError | None = None
    for root_inputs in (True, False):
        mode = mode_model(model, supports, anchors, root_inputs=root_inputs)
        q = extend_configuration(model, mode, q_base)
        preferred, last = _tiers(mode)
        try:
            part = partition_at(mode, q, name=name, length=length, preferred=preferred,
                                last=last)
        except (CompileError, np.linalg.LinAlgError) as err:
            last_err = err if isinstance(err, CompileError) else CompileError(str(err))
            continue
        return ModeInfo(name, tuple(supports), part, anchors_array(anchors),
                        mode.nv_tree - part.independent.size, actuation_rank(mode, part, q),
                        root_inputs)
    raise CompileError(f"mode '{name}' ({', '.join(supports) or 'no supports'}): no valid "
                       f"partition: {last_err}")


def model_for(model: CompiledModel, mode: ModeInfo, anchors: np.ndarray | None = None
              ) -> CompiledModel:
    """The model of a stored mode with its partition, at ``anchors`` ((k, 7); default: the
    reference anchors)."""
    a = mode.anchors if anchors is None else anchors
    return mode_model(model, mode.supports, anchors_se3(a), root_inputs=mode.root_inputs,
                      partition=mode.partition)


def enumerate_modes(model: CompiledModel, length: float | None = None,
                    requests: Sequence[tuple[str, tuple[str, ...]]] = (),
                    all_sets: bool = False) -> tuple[tuple[ModeInfo, ...], tuple[str, ...]]:
    """The modes to compile: ``free`` and every actuated support set (``all_sets``), and
    the requested ones (kept even when not actuated).

    Returns:
        ``(modes, notes)``: notes name the support sets left out and why.

    Raises:
        UsageError: bad requests (unknown supports, duplicate or reserved names, too many
            supports to enumerate); CompileError: a requested mode has no valid partition.
    """
    names = [s.name for s in model.record.supports]
    out: dict[str, ModeInfo] = {}
    notes: list[str] = []
    if all_sets:
        if len(names) > MAX_ENUMERATED_SUPPORTS:
            raise UsageError(f"--modes all: the record has {len(names)} supports (2^n − 1 "
                             f"sets); at most {MAX_ENUMERATED_SUPPORTS} can be enumerated — "
                             "name the modes with --mode NAME=s1,s2,…")
        for i, n in enumerate(names):  # a '/' in a name would split its modes' group
            if "/" in n:
                raise UsageError(f"{model.record.source}: supports[{i}].name: support name "
                                 f"'{n}' contains '/', which --modes all cannot put in a mode "
                                 "name; rename the support (no '/') or name the modes with "
                                 "--mode NAME=s1,s2,…")
        out[FREE] = analyse_mode(model, FREE, (), length)
        for k in range(1, len(names) + 1):
            for subset in itertools.combinations(names, k):
                name = mode_name(subset)
                _check_name(name, f"support set {subset}")
                try:
                    info = analyse_mode(model, name, subset, length)
                except CompileError as err:
                    notes.append(f"{name}: no valid partition ({err})")
                    continue
                n_u, n_act = info.partition.independent.size, len(model.record.actuators)
                if n_u > n_act:
                    notes.append(f"{name}: left out, {n_u} independent speeds for {n_act} "
                                 "actuators (some directions cannot be driven)")
                    continue
                out[name] = info
    for name, subset in requests:
        _check_name(name, f"--mode {name}")
        if name in out and not all_sets:
            raise UsageError(f"--mode {name}: the name is used twice")
        subset = check_supports(model, subset, f"--mode {name}")
        if name == FREE and subset:
            raise UsageError("--mode free: the name 'free' is reserved for the mode without "
                             "supports")
        out[name] = analyse_mode(model, name, subset, length)
    return tuple(out.values()), tuple(notes)


def _check_name(name: str, what: str) -> None:
    problem = group_name_problem(name)
    if problem:
        raise UsageError(f"{what}: mode name '{name}' {problem}; expected a plain name (it "
                         "names a bundle group: non-empty, no '/', not '.' or '..')")


def parse_mode_request(text: str) -> tuple[str, tuple[str, ...]]:
    """``"NAME=s1,s2"`` → ``("NAME", ("s1", "s2"))``; ``"free="`` → ``("free", ())``.

    Raises:
        UsageError: not of the form NAME=support[,support…].
    """
    name, sep, rest = text.partition("=")
    names = tuple(s.strip() for s in rest.split(",") if s.strip())
    if not sep or not name.strip() or (not names and name.strip() != FREE):
        raise UsageError(f"--mode '{text}': expected NAME=support1,support2,…")
    return name.strip(), names


def base_sizes(mode: CompiledModel) -> tuple[int, int]:
    """``(nq, nv)`` of the base model inside a mode model (its coordinates come first)."""
    if not mode.supports:
        return mode.nq, mode.nv
    first = mode.chord_edges[mode.n_chords - len(mode.supports)]
    return int(mode.q_offset[first]), int(mode.v_offset[first])


def cut_coordinates(model: CompiledModel, q: np.ndarray) -> np.ndarray:
    """q with the record's cut joints' own coordinates solved from the tree configuration
    (Gauss–Newton on each chord's own columns, the tree held) — for plants that integrate
    only the tree (Pinocchio, MuJoCo). A mode model's support cut coordinates are left as
    they are. Plants hold their loops only approximately (Baumgarte, soft constraints), so
    the least-squares solution is taken when the chord cannot close exactly: the iteration
    stops once the residual stops contracting (``newton(contract=True)``) — without that
    every call ran all :data:`~rbc.model.closure.MAX_NEWTON` iterations towards a residual
    the loop gap keeps above the tolerance (0.19 s per state on the Kangaroo-like knee loops,
    each plant measurement)."""
    from rbc.model.closure import newton

    q = np.array(q, dtype=float)
    for i, e in enumerate(model.chord_edges[: model.n_chords - len(model.supports)]):
        sl = model.v_slice(e)
        if sl.stop > sl.start:
            q, _ = newton(model, q, [i], [], np.arange(sl.start, sl.stop), contract=True)
    return q
