"""Lyapunov-based deep neural network (LbDNN) switching adaptive controller, footed humanoid.

Method: Patil, Le, Greene, Dixon et al., "Lyapunov-derived control and adaptive update laws
for inner and outer layer weights of a deep neural network", IEEE Control Systems Letters 6,
2022 (all-layer update ``theta_hat_dot = proj(Gamma Phi'^T r)``), with the switched-systems
rule of its follow-ups: one network per continuous phase, frozen while its phase is
inactive. Everything is computed on the design model (the two :class:`PhaseFL` of a
:class:`rbc.walkers.control.footed.FootedWalker`); the controller is sampled once per step and held.

Per phase ``p`` (0 flat foot: 8 shape outputs + the phase-rate row, fully actuated;
1 toe roll: 8 shape outputs + the stance-ankle output, 9 actuators on 10 coordinates):

* ``A_p = J D^-1 B`` (9, 9), ``f_p = -J D^-1 (H + G) - drift`` with the rows ``J`` and
  ``drift = h_d'' sdot^2`` of :class:`PhaseFL` (0 on the phase-rate row). In the fully
  actuated flat-foot phase ``A_0`` is square and invertible, so ``u = A_0^-1 (...)`` cancels
  the stance-ankle cross-coupling into every output exactly.
* Errors: shape rows ``e = H0 q - h_d(s)``, ``r = de + Lambda e``; phase-rate row
  ``r_s = sdot - sdot_d`` (first order).
* Control: ``u = A_p^-1 (v - f_p - Phi_p(x; theta_p))`` with ``v = -Lambda de - K r`` on the
  shape rows and ``v = -k_s r_s`` on the phase-rate row; ``Phi_p`` approximates phase
  ``p``'s unknown drift ``d_p`` (the true plant's ``ydd = A u + f + d``).
* Update, integrated by explicit Euler at the simulation step for the active phase only:
  ``theta_p <- theta_p + dt Gamma (Phi_p'(x; theta_p)^T r - sigma theta_p)`` where
  ``Phi'^T r`` is the gradient of ``r . Phi`` with respect to every layer's weights and
  biases (one backward pass: the all-layer Jacobian transpose). The inactive phase's
  network is frozen and resumes at its next recurrence (transport rule).

Simplification (documented in docs/walkers.md §13): the smooth projection of Patil et al.
that keeps ``theta`` in a ball is replaced by the sigma modification (a leak ``-sigma
theta``), which bounds the weights at the price of a residual bias in ``Phi``.
"""

from __future__ import annotations

import numpy as np

from rbc.walkers.control.learning import hierarchy_gains
from rbc.walkers.hybrid.model import FusedTerms


class DeepNet:
    """Fully connected ``tanh`` network ``Phi(x) = W_L tanh(... tanh(W_1 x + b_1)) + b_L``.

    Args:
        sizes: layer widths ``(n_in, h_1, ..., n_out)``. rng: initialiser (weights
            N(0, 1/fan_in) scaled by 0.5; the output layer starts at 0 so ``Phi = 0``).
    """

    def __init__(self, sizes: tuple[int, ...], rng: np.random.Generator) -> None:
        self.W, self.b = [], []
        for k, (a, o) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
            last = k == len(sizes) - 2
            self.W.append(np.zeros((o, a)) if last else rng.normal(0, 0.5 / np.sqrt(a), (o, a)))
            self.b.append(np.zeros(o))

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """``(Phi (n_out,), activations)`` (the inputs of every layer, for backward)."""
        acts = [x]
        h = x
        for W, b in zip(self.W[:-1], self.b[:-1], strict=True):
            h = np.tanh(W @ h + b)
            acts.append(h)
        return self.W[-1] @ h + self.b[-1], acts

    def jacobian_transpose(self, acts: list[np.ndarray], g: np.ndarray):
        """``Phi'^T g``: gradients of ``g . Phi`` w.r.t. ``(W_k, b_k)`` of every layer."""
        gW, gb = [None] * len(self.W), [None] * len(self.W)
        delta = g
        for k in range(len(self.W) - 1, -1, -1):
            gW[k], gb[k] = np.outer(delta, acts[k]), delta
            if k:
                delta = (self.W[k].T @ delta) * (1.0 - acts[k] ** 2)  # tanh' = 1 - tanh^2
        return gW, gb

    def step(self, gW, gb, rate: float, sigma: float) -> None:
        """``theta <- theta + rate (grad - sigma theta)`` for every layer."""
        for k in range(len(self.W)):
            self.W[k] += rate * (gW[k] - sigma * self.W[k])
            self.b[k] += rate * (gb[k] - sigma * self.b[k])

    def norm(self) -> float:
        """Frobenius norm of all parameters."""
        return float(np.sqrt(sum((W * W).sum() + (b * b).sum()
                                 for W, b in zip(self.W, self.b, strict=True))))


class SwitchingLbDNN:
    """Per-phase LbDNN controller ``controller(phase, t, x) -> u`` (module docstring).

    Args:
        walker: the design :class:`rbc.walkers.control.footed.FootedWalker`. dt: control step [s].
        hidden: hidden widths. gamma: adaptation gain ``Gamma`` (scalar). sigma: leak [1/s].
        seed: initialiser seed. learn: False gives the same controller with frozen zero
            networks (``Phi = 0``: plain feedback linearization on the hierarchy).
        rise: add the composite's per-phase leaky robust integral
            ``nu_p <- nu_p + dt (K alpha_2 r + beta sgn r - leak nu_p)`` (subtracted like
            ``Phi_p``; frozen while its phase is inactive, as the networks).
        alpha2, beta, leak: RISE gains [1/s, rad/s^3, 1/s].
    """

    def __init__(self, walker, dt: float, hidden: tuple[int, ...] = (16, 16),
                 gamma: float = 5.0, sigma: float = 0.05, seed: int = 0,
                 learn: bool = True, rise: bool = False, alpha2: float | None = None,
                 beta: float = 2.0, leak: float = 1.0) -> None:
        rng = np.random.default_rng(seed)
        self.dt, self.gamma, self.sigma, self.learn = dt, gamma, sigma, learn
        self.rise, self.beta, self.leak = rise, beta, leak
        self.phases = (walker.flat, walker.toe)
        self.terms = tuple(FusedTerms(p.model, walker.alpha) for p in self.phases)
        self.nets = tuple(DeepNet((2 * p.model.n, *hidden, p.model.B.shape[1]), rng)
                          for p in self.phases)
        self.lam, self.k = hierarchy_gains(walker.flat.kp, walker.flat.kd)
        self.updates = [0, 0]  # update steps taken by each phase's network
        self.alpha2 = 0.25 * self.k if alpha2 is None else alpha2
        self.nu = [np.zeros(p.model.B.shape[1]) for p in self.phases]

    def __call__(self, phase: int, t: float, x: np.ndarray) -> np.ndarray:
        """Torque (9,) [N m] for the active ``phase`` at state ``x`` (2n,)."""
        P = self.phases[phase]
        n, p = P.model.n, P.H0.shape[0]
        q, qd = x[:n], x[n:]
        pre = P._pre
        cd = pre["cd"]
        s, sd = cd @ q - pre["th0"], cd @ qd
        h = (pre["P012"] @ (s ** pre["pow"])).reshape(3, p)
        rows = P.H0 - h[1][:, None] * cd
        J = np.vstack([rows, cd]) if P.speed is not None else rows
        Xu, x0 = self.terms[phase].accel_affine(q, qd, P.model.B)
        A, f = J @ Xu, J @ x0
        f[:p] -= h[2] * sd * sd
        e, de = P.H0 @ q - h[0], rows @ qd
        r = de + self.lam * e
        v = -self.lam * de - self.k * r
        if P.speed is not None:
            r = np.append(r, sd - P.speed[1])
            v = np.append(v, -P.speed[0] * r[-1])
        net = self.nets[phase]
        phi, acts = net.forward(x)
        u = np.linalg.solve(A, v - f - phi - self.nu[phase])
        if self.rise:
            nu = self.nu[phase]
            nu += self.dt * (self.k * self.alpha2 * r + self.beta * np.sign(r)
                             - self.leak * nu)
        if self.learn:  # only the active phase's network moves (transport rule)
            gW, gb = net.jacobian_transpose(acts, r)
            net.step(gW, gb, self.dt * self.gamma, self.sigma)
            self.updates[phase] += 1
        return u


def footed_output_error(walker, res) -> np.ndarray:
    """``|y|^2`` (N,) [rad^2] of the 8 shape outputs along a footed walk ``res``.

    ``res.x`` rows are (20,) toe-roll-order states (flat-foot samples embedded with the
    frozen foot angle and a zero foot rate); ``res.phase`` selects the phase controller.
    """
    out = np.empty(len(res.t))
    for k, (x, ph) in enumerate(zip(res.x, res.phase, strict=True)):
        P = walker.flat if ph == 0 else walker.toe
        n = P.model.n
        y = P.outputs(x[:n], x[10:10 + n])[0][:8]
        out[k] = y @ y
    return out
