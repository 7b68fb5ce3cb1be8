"""Poincaré fixed points, periods and eigenvalues of the classic passive walkers against
independent high-accuracy computations (issue 22 acceptance).

Each reference is written here from its paper's equations, not from rbc's model format:
its own coordinates, an adaptive 8th-order integrator (scipy DOP853 at rtol 1e-13) with its
own event location, its own impact map, and its Jacobian from the variational equations
with complex-step derivatives of the closed-form vector field and impact map (exact to
round-off) and the continuous-time saltation term. rbc's figures come from fixed-step RK4
(1 ms or the model's ``dt``) with the exact derivative of that discrete map."""

import math

import mpmath
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from rbc.cli.main import main
from rbc.walkers.api import find_gait
from rbc.walkers.control.controllers import make_controller
from rbc.walkers.evaluation.poincare import poincare_jacobian, stride_map
from rbc.walkers.hybrid.modelfile import read_model_file
from rbc.walkers.hybrid.registry import default_slope, load_model

RTOL = dict(rtol=1e-13, atol=1e-14, method="DOP853")


def _cstep(fun, x, h=1e-30):
    """Jacobian of a real-analytic ``fun`` by the complex step: exact to round-off."""
    cols = []
    for k in range(x.size):
        xc = x.astype(complex)
        xc[k] += 1j * h
        cols.append(np.imag(fun(xc)) / h)
    return np.stack(cols, axis=1)


def _flow(f, x0, event, t_max, start_event=None, direction=-1):
    """Integrate ``x' = f(x)`` with its STM until ``event(x) = 0`` (crossing in
    ``direction``); return the event state, time, and the STM with the saltation term."""
    n = x0.size

    def rhs(_t, y):
        x, P = y[:n], y[n:].reshape(n, n)
        return np.concatenate([f(x), (_cstep(f, x) @ P).ravel()])

    y0 = np.concatenate([x0, np.eye(n).ravel()])
    t0 = 0.0
    if start_event is not None:  # skip the mid-stride scuffing crossing
        ev0 = lambda _t, y: start_event(y[:n])  # noqa: E731
        ev0.terminal, ev0.direction = True, -1
        s = solve_ivp(rhs, (0, t_max), y0, events=ev0, **RTOL)
        t0, y0 = s.t_events[0][0], s.y_events[0][0]
    ev = lambda _t, y: event(y[:n])  # noqa: E731
    ev.terminal, ev.direction = True, direction
    s = solve_ivp(rhs, (t0, t_max), y0, events=ev, **RTOL)
    t, y = s.t_events[0][0], s.y_events[0][0]
    x, P = y[:n], y[n:].reshape(n, n)
    grad = _cstep(lambda z: np.atleast_1d(event(z)), x)[0]
    fx = f(x)
    return x, t, P - np.outer(fx, grad @ P) / (grad @ fx)


def _fixed_point(f, jump, event, x0, t_max, start_event=None, iters=4, direction=-1):
    """Newton on ``P(x) - x`` with the reference Jacobian; returns (x*, period, DP,
    residual). Started from rbc's fixed point, within 1e-10, so 4 iterations are plenty."""
    x = np.array(x0, dtype=float)
    for _ in range(iters):
        xm, t, S = _flow(f, x, event, t_max, start_event, direction)
        px, DJ = jump(xm), _cstep(jump, xm)
        DP = DJ @ S
        x = x - np.linalg.lstsq(DP - np.eye(x.size), px - x, rcond=None)[0]
    xm, t, S = _flow(f, x, event, t_max, start_event, direction)
    return x, t, _cstep(jump, xm) @ S, np.max(np.abs(jump(xm) - x))


def _match(a, b):
    """Max distance between two eigenvalue sets (greedy nearest matching)."""
    b = list(b)
    worst = 0.0
    for z in a:
        k = int(np.argmin([abs(z - w) for w in b]))
        worst = max(worst, abs(z - b.pop(k)))
    return worst


# ---------------------------------------------------------------- compass (Goswami 1998)
M_LEG, M_HIP, A, B, L, G = 5.0, 10.0, 0.5, 0.5, 1.0, 9.81


def _compass_field(x):
    """World-frame angles from the vertical (clockwise, leaning downhill positive): stance
    t1, swing t2 (foot -> hip); Lagrange's equations derived by hand for this test."""
    t1, t2, w1, w2 = x
    k = M_LEG * L * B
    c, s = np.cos(t1 - t2), np.sin(t1 - t2)
    D = np.array([[M_LEG * A**2 + (M_HIP + M_LEG) * L**2, -k * c], [-k * c, M_LEG * B**2]])
    rhs = np.array([k * s * w2**2 + G * (M_LEG * A + (M_HIP + M_LEG) * L) * np.sin(t1),
                    -k * s * w1**2 - G * M_LEG * B * np.sin(t2)])
    return np.concatenate([[w1, w2], np.linalg.solve(D, rhs)])


def _compass_jump(x, gamma):
    """Heelstrike by angular momentum: whole body about the new contact, and the leg that
    becomes the swing leg about the hip; then the legs exchange roles."""
    t1, t2, w1, w2 = x
    u = lambda t: np.array([np.sin(t), np.cos(t)])  # noqa: E731
    v = lambda t: np.array([np.cos(t), -np.sin(t)])  # noqa: E731
    cross = lambda r, w: r[0] * w[1] - r[1] * w[0]  # noqa: E731
    hip = L * u(t1)
    P = hip - L * u(t2)  # new contact
    vh = L * w1 * v(t1)
    before_all = (M_LEG * cross(A * u(t1) - P, A * w1 * v(t1)) + M_HIP * cross(hip - P, vh)
                  + M_LEG * cross(hip - B * u(t2) - P, vh - B * w2 * v(t2)))
    before_leg = M_LEG * cross(-B * u(t1), A * w1 * v(t1))

    def after(rates):  # new stance = old swing (angle t2), new swing = old stance (t1)
        s1, s2 = rates
        h = L * u(t2)
        vh2 = L * s1 * v(t2)
        tot = (M_LEG * cross(A * u(t2), A * s1 * v(t2)) + M_HIP * cross(h, vh2)
               + M_LEG * cross(h - B * u(t1), vh2 - B * s2 * v(t1)))
        leg = M_LEG * cross(-B * u(t1), vh2 - B * s2 * v(t1))
        return np.array([tot, leg])

    Mx = np.stack([after(e) for e in np.eye(2)], axis=1)  # momenta are linear in the rates
    r = np.linalg.solve(Mx, np.array([before_all, before_leg]))
    return np.array([t2, t1, r[0], r[1]], dtype=x.dtype)


def test_compass_at_three_degrees_matches_independent_reference():
    gamma = math.pi / 60
    fp = find_gait("compass", "passive", default_slope(load_model("compass")))

    def height(x):  # swing foot above the slope: world y cos + x sin
        foot = L * np.array([np.sin(x[0]) - np.sin(x[1]), np.cos(x[0]) - np.cos(x[1])])
        return foot[1] * np.cos(gamma) + foot[0] * np.sin(gamma)

    def armed(x):  # legs apart by 0.3 rad: past the mid-stance scuff
        return (x[1] - x[0]) + 0.3

    world = np.array([1.0, 1.0, 0.0, 0.0]) * gamma
    x_ref, t_ref, DP, res = _fixed_point(_compass_field, lambda x: _compass_jump(x, gamma),
                                         height, fp.x + world, 3.0, armed)
    assert res < 1e-13
    # RK4 at 1 ms converges as dt^4: the 1 ms vs 0.25 ms fixed points differ by ~2e-12
    # (docs/walkers.md §7), so 1e-10 is 50x that truncation error
    np.testing.assert_allclose(fp.x, x_ref - world, rtol=0, atol=1e-10)
    assert abs(fp.step_period - t_ref) < 1e-10
    lam_ref = np.linalg.eigvals(DP)
    assert _match(fp.eigenvalues, lam_ref) < 1e-10
    assert fp.jacobian_method == "variational"
    assert np.max(np.abs(fp.jacobian - fp.jacobian_fd)) < 1e-7  # FD cross-check (eps 1e-6)


# ---------------------------------------------------------------- Garcia et al. 1998
def _garcia_field(gamma):
    def f(x):
        th, thd, ph, phd = x
        thdd = np.sin(th - gamma)
        return np.array([thd, thdd, phd, np.sin(ph) * (thd**2 - np.cos(th - gamma)) + thdd])
    return f


def _garcia_jump(x):
    th, thd, _, _ = x
    c = np.cos(2 * th)
    return np.array([-th, c * thd, -2 * th, c * (1 - c) * thd], dtype=x.dtype)


def _to_rbc(g):
    """Garcia's (theta, thetadot, phi, phidot) -> rbc's [stance, swing, rates]."""
    th, thd, ph, phd = g
    return np.array([-th, ph - th, -thd, phd - thd])


@pytest.fixture(scope="module")
def garcia_fp():
    return find_gait("garcia", "passive", default_slope(load_model("garcia")), cross_check=False)


def test_garcia_limit_matches_garcia_equations(garcia_fp):
    gamma, fp = 0.009, garcia_fp
    g0 = np.array([-fp.x[0], -fp.x[2], fp.x[1] - fp.x[0], fp.x[3] - fp.x[2]])
    g, t, DP, res = _fixed_point(_garcia_field(gamma), _garcia_jump,
                                 lambda x: x[2] - 2 * x[0], g0, 10.0,
                                 start_event=lambda x: x[0] + 0.05, direction=1)
    assert res < 1e-13
    assert abs(g[0] - 0.2003) < 1e-4 and abs(g[3] + 0.0158) < 1e-4  # Garcia 1998, Sec. 4
    np.testing.assert_allclose(fp.x, _to_rbc(g), rtol=0, atol=1e-10)
    assert abs(fp.step_period - t) < 1e-10
    # eigenvalues are invariant under the linear change of coordinates
    assert _match(fp.eigenvalues, np.linalg.eigvals(DP)) < 1e-9


# ---------------------------------------------------------------- rimless wheel
def test_rimless_wheel_closed_forms():
    """Stance: hub on a massless spoke, an inverted pendulum, energy
    ½ l² w² + g l cos(q + γ) conserved; impact: angular momentum about the new contact,
    w+ = cos(2π/N) w-; q+ = -π/N. Fixed point ω*² = c² K / (1 - c²) with
    K = 4 (g/l) sin(π/N) sin γ, c = cos(2π/N); period = ∫ dq / w(q); multiplier c²
    (d(ω+²)/d(ω²) = c² and ω+ = ω at the fixed point)."""
    m = load_model("rimless")
    N, gamma, g, l = 8, default_slope(m), m.g, 1.0
    c = math.cos(2 * math.pi / N)
    K = 4 * g / l * math.sin(math.pi / N) * math.sin(gamma)
    w_star = math.sqrt(c * c * K / (1 - c * c))
    mpmath.mp.dps = 30
    a0 = mpmath.pi / N
    E = mpmath.mpf(w_star) ** 2 + 2 * g / l * mpmath.cos(-a0 + gamma)
    period = float(mpmath.quad(lambda q: 1 / mpmath.sqrt(E - 2 * g / l * mpmath.cos(q + gamma)),
                               [-a0, a0]))
    fp = find_gait("rimless", "passive", gamma, cross_check=False)
    assert abs(fp.x[0] + math.pi / N) < 1e-12  # exact by the relabel offset
    assert abs(fp.x[1] - w_star) < 1e-10
    assert abs(fp.step_period - period) < 1e-10
    lam = sorted(np.abs(fp.eigenvalues))
    assert lam[0] < 1e-12  # structural zero: q+ is always -π/N
    assert abs(lam[1] - c * c) < 1e-12


# ---------------------------------------------------------------- finite foot mass, β -> 0
GARCIA_BETA = """# Garcia's walker with finite foot masses beta (a user's model file)
name: garcia_beta
coordinates: [stance, swing]
relabel: [swing, stance]
masses:
  - {{name: hip, mass: 1.0, path: {{stance: 1.0}}}}
  - {{name: stance_foot, mass: {beta}, path: {{}}}}
  - {{name: swing_foot, mass: {beta}, path: {{stance: 1.0, swing: -1.0}}}}
points:
  hip: {{stance: 1.0}}
  swing_foot: {{stance: 1.0, swing: -1.0}}
gravity: 1.0
mu: 1.0
phase: {{coefficients: {{stance: 1.0}}}}
initial_state: [-0.2003, 0.2003, 0.1998, 0.1840]
slope: 0.009
dt: 0.002
"""


def _beta_file(tmp_path, beta):
    f = tmp_path / f"garcia_beta_{beta:g}.yaml"
    f.write_text(GARCIA_BETA.format(beta=repr(beta)))
    return f


def test_finite_foot_mass_garcia_from_the_command_line(tmp_path, capsys, garcia_fp):
    import json

    f = _beta_file(tmp_path, 1e-6)
    assert main(["walk", "fixedpoint", "--model", str(f), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["jacobian_method"] == "variational"
    x = np.array(out["fixed_point"])
    lam = np.array([complex(re, im) for re, im in out["eigenvalues"]])
    # the variational Jacobian against a Richardson-extrapolated central difference of the
    # map, (4 D(h/2) - D(h)) / 3 at h = 3e-4. Measured: eigenvalues agree to 2e-7, entries
    # to 8e-7 (at h = 1e-4 the first three rows to 5e-9, the last to 4e-7). The floor of the
    # FD side, not of the variational one: the 1e-6 foot makes the simulated map's last
    # component noisy at 2e-11 (|P(x + d) - P(x) - J d| for |d| ~ 1e-11) and curved
    # (Richardson error 5e-5 at h = 1e-3, 4e-7 at 3e-4, noise-bound below), so no step
    # reaches the 1e-9 (docs/walkers.md §7, open). Bounds: 10x the measured values.
    m = read_model_file(f)
    pm = stride_map(m, make_controller("passive", m, 0.009), 0.009, 0.002)
    J = np.array(out["jacobian"])
    h = 3e-4
    R = (4 * poincare_jacobian(pm, x, h / 2) - poincare_jacobian(pm, x, h)) / 3
    assert np.max(np.abs(J - R)) < 1e-5
    assert _match(lam, np.linalg.eigvals(R)) < 3e-6
    # and it is the limit model's gait to O(beta)
    assert _match(lam, garcia_fp.eigenvalues) < 1e-4
    np.testing.assert_allclose(x, garcia_fp.x, atol=1e-5)


def test_eigenvalues_tend_to_the_limit_model(tmp_path, garcia_fp):
    errs = []
    for beta in (1e-2, 1e-3):
        fp = find_gait(str(_beta_file(tmp_path, beta)), "passive", 0.009, cross_check=False)
        errs.append(_match(fp.eigenvalues, garcia_fp.eigenvalues))
    # first order in beta (measured: 0.163 at 1e-2, 0.0145 at 1e-3, ~15 beta): ten times
    # smaller beta, about ten times closer
    assert errs[1] < errs[0] / 5 and errs[1] < 20 * 1e-3, errs
