"""Holonomic couplings ``γ(q) = 0``: value, Jacobian row and curvature term (DESIGN.md §4).

Every coupling relates 1-coordinate joints (for them ``q̇ = v``, N = 1), so its closure row
is the gradient ``Dγ`` on the joints' velocity columns and its contribution to ``Ċ v`` (the
curvature source, :mod:`rbc.model.partition`) is ``vᵀ D²γ v``:

* ``linear``: ``γ = Σ_k c_k q_k + offset``; ``Dγ = c`` (constant), ``vᵀD²γ v = 0``;
* ``polynomial`` / ``table``: ``γ = q_out − h(q_in)`` with the profile h
  (:mod:`rbc.model.profiles`); ``Dγ = (1, −h'(q_in))``, ``vᵀD²γ v = −h''(q_in) v_in²``.

A :class:`CouplingForm` is the coupling as index data (q and v indices, coefficients or
profile) built once per compiled model; :func:`coupling_terms` is the one pure function
every consumer calls (closure geometry on both evaluators, the references in ``verify/``,
the reactions), so linear and nonlinear couplings enter C, Ċ v and every reference alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbc.ir.record import Coupling, Profile
from rbc.model.profiles import profile_terms


@dataclass(frozen=True)
class CouplingForm:
    """One coupling on a model's coordinates.

    Attributes:
        kind: ``linear`` or the profile type.
        v_index, q_index: velocity and configuration indices of the joints it relates
            (linear: the terms in record order; profile: ``(out, in)``).
        coef: linear coefficients (profile couplings: ``()``).
        offset: linear offset.
        profile: the profile h of ``γ = q_out − h(q_in)``, or None.
    """

    kind: str
    v_index: tuple[int, ...]
    q_index: tuple[int, ...]
    coef: tuple[float, ...] = ()
    offset: float = 0.0
    profile: Profile | None = None

    @property
    def linear(self) -> bool:
        """True when the row is constant (``Dγ`` independent of q)."""
        return self.profile is None


def coupling_form(c: Coupling, v_offset: dict[str, int], q_offset: dict[str, int]
                  ) -> CouplingForm:
    """The index form of record coupling c, with each joint's coordinate offsets."""
    if c.profile is None:
        names = [n for n, _ in c.terms]
        return CouplingForm("linear", tuple(v_offset[n] for n in names),
                            tuple(q_offset[n] for n in names),
                            tuple(float(x) for _, x in c.terms), float(c.offset))
    names = [str(c.joint), str(c.input)]
    return CouplingForm(c.type, tuple(v_offset[n] for n in names),
                        tuple(q_offset[n] for n in names), profile=c.profile)


def form_terms(form: CouplingForm, q: np.ndarray, v: np.ndarray | None = None
               ) -> tuple[float, np.ndarray, float]:
    """``(γ, Dγ on form.v_index (k,), vᵀ D²γ v)`` of one coupling at (q, v); the last is 0
    when v is None."""
    if form.profile is None:
        gamma = float(sum(c * q[i] for c, i in zip(form.coef, form.q_index, strict=True)))
        return gamma + form.offset, np.asarray(form.coef, dtype=float), 0.0
    q_out, q_in = form.q_index
    h, dh, d2h = profile_terms(form.profile, float(q[q_in]))
    curv = 0.0 if v is None else -d2h * float(v[form.v_index[1]]) ** 2
    return float(q[q_out]) - h, np.array([1.0, -dh]), curv


def coupling_terms(forms: tuple[CouplingForm, ...], nv: int, q: np.ndarray,
                   v: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All couplings at (q, v).

    Args:
        forms: the model's coupling forms (``CompiledModel.coupling_forms``).
        nv: number of velocity coordinates.
        q: (nq,) configuration; v: (nv,) velocity or None.

    Returns:
        ``(γ (n_c,), D (n_c, nv), Ḋ v (n_c,))``: residuals [rad or m], the rows ``Dγ·N``
        and the velocity products ``vᵀ D²γ v`` (zeros when v is None).
    """
    n = len(forms)
    gamma, D, dv = np.zeros(n), np.zeros((n, nv)), np.zeros(n)
    for c, form in enumerate(forms):
        gamma[c], row, dv[c] = form_terms(form, q, v)
        np.add.at(D[c], list(form.v_index), row)
    return gamma, D, dv
