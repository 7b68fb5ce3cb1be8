"""Policy runner numerics and JSON format (rbc.policy.runner), against independent loops."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from rbc.errors import RbcError
from rbc.policy.runner import (
    ACTIVATIONS,
    DenseLayer,
    LSTMBlock,
    PolicyFormatError,
    PolicyNetwork,
    PolicyRunner,
    load_policy,
    policy_from_dict,
    policy_to_dict,
    save_policy,
)

# ------------------------------------------------------------ independent reference (loops)


def _sig(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


def _act(name: str, z: float, alpha: float) -> float:
    if name == "tanh":
        return math.tanh(z)
    if name == "relu":
        return z if z > 0 else 0.0
    if name == "elu":
        return z if z > 0 else alpha * (math.exp(z) - 1.0)
    return z


def _loop_lstm(W_ih, W_hh, b_ih, b_hh, x, h, c):
    """nn.LSTM docs, one unit at a time: rows [0,H) i, [H,2H) f, [2H,3H) g, [3H,4H) o."""
    H = len(h)
    pre = [[0.0] * H for _ in range(4)]
    for gate in range(4):
        for u in range(H):
            row = gate * H + u
            s = b_ih[row] + b_hh[row]
            for k in range(len(x)):
                s += W_ih[row][k] * x[k]
            for k in range(H):
                s += W_hh[row][k] * h[k]
            pre[gate][u] = s
    c_new = [_sig(pre[1][u]) * c[u] + _sig(pre[0][u]) * math.tanh(pre[2][u]) for u in range(H)]
    h_new = [_sig(pre[3][u]) * math.tanh(c_new[u]) for u in range(H)]
    return h_new, c_new


def _loop_dense(layers, x):
    for W, b, act, alpha in layers:
        x = [_act(act, b[r] + sum(W[r][k] * x[k] for k in range(len(x))), alpha)
             for r in range(len(b))]
    return x


def _random_net(rng, n_obs=5, H=4, widths=(6, 3), acts=("elu", "identity"), lstm=True):
    blk = None
    width = n_obs
    if lstm:
        blk = LSTMBlock(rng.normal(size=(4 * H, n_obs)), rng.normal(size=(4 * H, H)),
                        rng.normal(size=4 * H), rng.normal(size=4 * H))
        width = H
    layers = []
    for w, a in zip(widths, acts, strict=True):
        layers.append(DenseLayer(rng.normal(size=(w, width)), rng.normal(size=w), a, 0.7))
        width = w
    return PolicyNetwork(n_obs, width, blk, tuple(layers))


@pytest.mark.parametrize("act", ["tanh", "relu", "elu"])
def test_recurrent_rollout_matches_per_gate_loops(act):
    rng = np.random.default_rng(7)
    net = _random_net(rng, acts=(act, "identity"))
    obs = rng.normal(size=(12, net.n_obs)) * 2.0
    got = PolicyRunner(net).rollout(obs)
    L = net.lstm
    h, c = [0.0] * L.hidden_size, [0.0] * L.hidden_size
    dense = [(x.weight.tolist(), x.bias.tolist(), x.activation, x.alpha) for x in net.layers]
    for t in range(obs.shape[0]):
        h, c = _loop_lstm(L.weight_ih.tolist(), L.weight_hh.tolist(), L.bias_ih.tolist(),
                          L.bias_hh.tolist(), obs[t].tolist(), h, c)
        want = _loop_dense(dense, h)
        # same float64 arithmetic in a different summation order: a few ulp of |terms| ~ 10
        np.testing.assert_allclose(got[t], want, rtol=0, atol=1e-12, err_msg=f"step {t}")


def test_feedforward_matches_loops_all_activations():
    rng = np.random.default_rng(3)
    net = _random_net(rng, widths=(5, 4, 3, 2), acts=("tanh", "relu", "elu", "identity"),
                      lstm=False)
    dense = [(x.weight.tolist(), x.bias.tolist(), x.activation, x.alpha) for x in net.layers]
    runner = PolicyRunner(net)
    for x in rng.normal(size=(5, net.n_obs)) * 3.0:
        # summation order only (float64): far below any real discrepancy
        np.testing.assert_allclose(runner(x), _loop_dense(dense, x.tolist()), atol=1e-12)


def test_state_is_carried_and_reset():
    rng = np.random.default_rng(11)
    runner = PolicyRunner(_random_net(rng))
    x0, x1 = rng.normal(size=(2, 5))
    runner(x0)
    carried = runner(x1)
    runner.reset()
    fresh = runner(x1)
    assert np.max(np.abs(carried - fresh)) > 1e-3  # the state matters for this network
    runner.reset()
    runner(x0)
    np.testing.assert_array_equal(runner(x1), carried)  # deterministic replay
    obs = rng.normal(size=(6, 5))
    np.testing.assert_array_equal(runner.rollout(obs), runner.rollout(obs))  # rollout resets


def test_elu_large_negative_and_sigmoid_saturation_are_finite():
    net = PolicyNetwork(1, 1, LSTMBlock(np.full((4, 1), 1e4), np.zeros((4, 1)), np.zeros(4),
                                        np.zeros(4)),
                        (DenseLayer(np.array([[-1e4]]), np.zeros(1), "elu", 1.0),))
    out = PolicyRunner(net).rollout(np.array([[1.0], [-1.0]]))
    assert np.all(np.isfinite(out))
    # step 0: i = f = o = 1, g = tanh(1e4) = 1 → c = 1, h = tanh(1); ELU(-1e4 tanh 1) = -1
    assert out[0, 0] == pytest.approx(-1.0, abs=1e-15)  # exp(-7616) underflows to exactly 0


# ---------------------------------------------------------------------------------- JSON


def test_json_round_trip(tmp_path):
    rng = np.random.default_rng(5)
    net = _random_net(rng)
    net = PolicyNetwork(net.n_obs, net.n_act, net.lstm, net.layers,
                        {"n_obs": 5, "n_act": 3, "action_scale": 0.25}, {"file": "x.pt"})
    p = save_policy(net, tmp_path / "p.json")
    back = load_policy(p)
    assert back.contract == net.contract and back.source == net.source
    for a, b in [(net.lstm.weight_ih, back.lstm.weight_ih), (net.lstm.bias_hh, back.lstm.bias_hh),
                 (net.layers[0].weight, back.layers[0].weight)]:
        # six decimals: half a unit in the 6th place, plus float64 representation
        assert np.max(np.abs(a - b)) <= 5e-7 + 1e-15
    assert [x.activation for x in back.layers] == ["elu", "identity"]
    assert back.layers[0].alpha == 0.7
    # the rounded network is a fixed point: writing it again gives the same bytes
    p2 = save_policy(back, tmp_path / "p2.json")
    assert p.read_bytes() == p2.read_bytes()
    obs = rng.normal(size=(4, 5))
    np.testing.assert_array_equal(PolicyRunner(back).rollout(obs),
                                  PolicyRunner(load_policy(p2)).rollout(obs))


def _doc():
    rng = np.random.default_rng(1)
    return policy_to_dict(_random_net(rng))


def _set(doc, path, value):
    keys = path.split(".")
    node = doc
    for k in keys[:-1]:
        node = node[int(k)] if isinstance(node, list) else node[k]
    last = keys[-1]
    if value is _DEL:
        del node[last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value


_DEL = object()

# (field, new value, the message must contain)
BAD = [
    ("lstm.weight_hh", _DEL, "p.json: lstm.weight_hh: missing field"),
    ("lstm.weight_ih", [[0.0] * 4] * 16, "lstm.weight_ih: shape (16, 4) does not match; "
                                         "expected shape (16, 5)"),
    ("lstm.bias_ih", [0.0] * 3, "lstm.bias_ih: shape (3,) does not match; expected shape (16,)"),
    ("lstm.gate_order", "ifog", "lstm.gate_order: unsupported gate order 'ifog'"),
    ("layers.0.activation", "gelu", "layers[0].activation: unknown activation 'gelu'; "
                                    "valid choices: " + ", ".join(ACTIVATIONS)),
    ("layers.0.activation", "Elu", "(did you mean 'elu'?)"),
    ("layers.1.activation", _DEL, "layers[1].activation: missing field"),
    ("layers.1.bias", [0.0], "layers[1].bias: shape (1,) does not match; expected shape (3,)"),
    ("layers.1.weight", [[0.0] * 5] * 3, "layers[1].weight: shape (3, 5) does not match; "
                                         "expected shape (*, 6)"),
    ("layers.0.alpha", "one", "layers[0].alpha: 'one' is not a finite number"),
    ("layers", _DEL, "p.json: layers: missing field"),
    ("layers", [], "layers: not a non-empty list"),
    ("n_act", 4, "layers[1].weight: last layer has 3 outputs; expected n_act = 4"),
    ("n_obs", 0, "n_obs: 0 is not a positive integer"),
    ("format", "onnx", "format: 'onnx' is not a policy file"),
    ("version", 2, "version: unsupported version 2"),
    ("lstm.weight_hh", [["a"] * 4] * 16, "lstm.weight_hh: not a numeric array"),
    ("contract", {"n_obs": 47}, "contract.n_obs: 47 disagrees with the network; expected 5"),
]


@pytest.mark.parametrize(("field", "value", "message"), BAD, ids=[b[0] + "/" + str(i)
                                                                  for i, b in enumerate(BAD)])
def test_malformed_json_messages(tmp_path, field, value, message):
    doc = _doc()
    _set(doc, field, value)
    p = tmp_path / "p.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(PolicyFormatError) as err:
        load_policy(p)
    assert message in str(err.value)
    assert isinstance(err.value, RbcError) and err.value.exit_code == 2


def test_invalid_json_and_missing_file(tmp_path):
    p = tmp_path / "p.json"
    p.write_text('{"format": ')
    with pytest.raises(PolicyFormatError, match=r"p\.json: invalid JSON at line 1"):
        load_policy(p)
    with pytest.raises(PolicyFormatError, match="file not found"):
        load_policy(tmp_path / "absent.json")
    with pytest.raises(PolicyFormatError, match="non-finite"):
        doc = _doc()
        doc["layers"][0]["bias"][0] = float("nan")
        policy_from_dict(doc, "x.json")
