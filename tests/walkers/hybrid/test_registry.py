"""Every registered model loads; bad names fail with the valid choices listed."""

import numpy as np
import pytest

from rbc.errors import RbcError
from rbc.walkers.control.controllers import CONTROLLERS, make_controller
from rbc.walkers.errors import WalkerError
from rbc.walkers.hybrid.registry import load_model, model_names


@pytest.mark.parametrize("name", model_names())
def test_every_model_loads(name):
    m = load_model(name)
    assert m.name == name
    assert m.A.shape == (len(m.m), m.n)
    assert "hip" in m.points and "swing_foot" in m.points
    # the relabeling exchanges the legs: applied twice it is the identity
    idx = np.array(m.relabel)
    np.testing.assert_array_equal(idx[idx], np.arange(m.n))
    # internal torques: each actuator column sums to zero (action = reaction)
    np.testing.assert_array_equal(m.B.sum(axis=0), np.zeros(m.B.shape[1]))


def test_unknown_model_lists_choices():
    with pytest.raises(WalkerError) as err:
        load_model("rabit")
    assert isinstance(err.value, RbcError)
    msg = str(err.value)
    assert all(n in msg for n in model_names()) and "did you mean 'rabbit'" in msg


def test_unknown_controller_lists_choices():
    with pytest.raises(WalkerError) as err:
        make_controller("pd", load_model("compass"), 0.0)
    assert all(c in str(err.value) for c in CONTROLLERS)


def test_fl_needs_virtual_constraints():
    with pytest.raises(WalkerError, match="virtual constraints"):
        make_controller("fl", load_model("compass"), 0.0)


@pytest.mark.parametrize("name", model_names())
def test_relabeling_describes_the_same_body(name):
    """Seen from the swing foot with relabeled coordinates, the masses are where they were:
    {c_k(q)} = {p_swing_foot(q) + c_k(R q)} as sets (the tree is symmetric under the leg
    exchange, which relabeling by permutation assumes; a rimless wheel's next spoke is the
    same spoke pattern turned by the relabel offset)."""
    from rbc.walkers.hybrid.impact import relabel
    from rbc.walkers.hybrid.model import mass_positions, point

    m = load_model(name)
    q = np.random.default_rng(4).uniform(-0.4, 0.4, m.n)
    old = mass_positions(m, q)
    new = mass_positions(m, relabel(m, q, q)[0]) + point(m, "swing_foot", q)
    key = np.lexsort((old[:, 1], old[:, 0]))
    key2 = np.lexsort((new[:, 1], new[:, 0]))
    # round-off of sums of a few O(1) terms
    np.testing.assert_allclose(old[key], new[key2], atol=1e-12)
    np.testing.assert_array_equal(m.m[key], m.m[key2])
