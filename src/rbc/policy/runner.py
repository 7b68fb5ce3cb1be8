"""JSON neural-policy runner: an optional LSTM block followed by dense layers (DESIGN.md §9).

The network maps an observation ``o_t`` (n_obs,) to an action ``a_t`` (n_act,). Numerics are
numpy float64. The recurrent state ``(h, c)`` lives in the runner (controller memory): it is
zero after :meth:`PolicyRunner.reset` and is carried from one :meth:`PolicyRunner.apply` call
to the next, as the TorchScript ``PolicyExporterLSTM`` of rsl_rl / unitree_rl_gym does.

LSTM step (Hochreiter & Schmidhuber 1997, with the forget gate of Gers et al. 2000; gate
order and equations of the PyTorch ``torch.nn.LSTM`` documentation), with
``z = W_ih x + b_ih + W_hh h + b_hh`` split in four blocks of H rows in the order
``i, f, g, o``::

    i = σ(z_i)      f = σ(z_f)      g = tanh(z_g)      o = σ(z_o)
    c' = f ⊙ c + i ⊙ g
    h' = o ⊙ tanh(c')

Dense layer ``y = act(W x + b)`` with ``act`` one of :data:`ACTIVATIONS`; ELU is
``x if x > 0 else α (exp(x) − 1)`` (Clevert, Unterthiner & Hochreiter 2016).

The file format is documented in ``docs/policy.md``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rbc.errors import InputError, RecordError
from rbc.safeio import atomic_write_text, load_json, load_npz, read_text

FORMAT = "rbc-policy"
VERSION = 1
ACTIVATIONS = ("identity", "tanh", "relu", "elu")
GATE_ORDER = "ifgo"
DECIMALS = 6  # weights are written rounded to six decimals (docs/policy.md §1)


class PolicyFormatError(RecordError):
    """A policy JSON file is malformed: a missing field, a wrong shape, an unknown name."""


def _locked(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=np.float64, copy=True)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class LSTMBlock:
    """One LSTM layer in PyTorch layout (gate blocks ``i, f, g, o`` stacked along rows).

    Attributes:
        weight_ih: (4H, n_in) input weights.
        weight_hh: (4H, H) recurrent weights.
        bias_ih: (4H,) input bias.
        bias_hh: (4H,) recurrent bias (added to ``bias_ih``; PyTorch keeps both).
    """

    weight_ih: np.ndarray
    weight_hh: np.ndarray
    bias_ih: np.ndarray
    bias_hh: np.ndarray

    @property
    def hidden_size(self) -> int:
        """H, the number of hidden units."""
        return int(self.weight_hh.shape[1])

    @property
    def input_size(self) -> int:
        """n_in, the input width."""
        return int(self.weight_ih.shape[1])


@dataclass(frozen=True)
class DenseLayer:
    """``y = act(W x + b)``.

    Attributes:
        weight: (n_out, n_in).
        bias: (n_out,).
        activation: one of :data:`ACTIVATIONS`, applied after the affine map.
        alpha: the ELU α (ignored by the other activations).
    """

    weight: np.ndarray
    bias: np.ndarray
    activation: str = "identity"
    alpha: float = 1.0


@dataclass(frozen=True)
class PolicyNetwork:
    """A validated policy: optional LSTM, then dense layers, plus its contract.

    Attributes:
        n_obs: observation width.
        n_act: action width.
        lstm: the recurrent block, or None for a feed-forward policy.
        layers: the dense layers, in order (at least one).
        contract: the observation/action contract (``policy_contract``), or None.
        source: provenance (file name, SHA-256, tensor names), free-form.
    """

    n_obs: int
    n_act: int
    lstm: LSTMBlock | None
    layers: tuple[DenseLayer, ...]
    contract: Mapping[str, Any] | None = None
    source: Mapping[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------------- numerics


def _sigmoid(z: np.ndarray) -> np.ndarray:
    # 0.5 (1 + tanh(z/2)) == 1/(1+e^-z), without overflow for large |z|
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def activate(name: str, x: np.ndarray, alpha: float = 1.0) -> np.ndarray:
    """Apply activation ``name`` elementwise.

    Args:
        name: one of :data:`ACTIVATIONS`.
        x: any shape.
        alpha: ELU α (Clevert et al. 2016, eq. 15).

    Raises:
        ValueError: unknown name (programming error: names are validated at load).
    """
    if name == "identity":
        return x
    if name == "tanh":
        return np.tanh(x)
    if name == "relu":
        return np.maximum(x, 0.0)
    if name == "elu":
        return np.where(x > 0.0, x, alpha * np.expm1(np.minimum(x, 0.0)))
    raise ValueError(f"unknown activation {name!r}")


def lstm_step(
    block: LSTMBlock, x: np.ndarray, h: np.ndarray, c: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """One LSTM step (PyTorch ``nn.LSTM`` equations, gate order i, f, g, o).

    Args:
        block: the weights.
        x: (n_in,) input.
        h: (H,) previous hidden state.
        c: (H,) previous cell state.

    Returns:
        ``(h', c')``, each (H,).
    """
    H = block.hidden_size
    z = block.weight_ih @ x + block.bias_ih + block.weight_hh @ h + block.bias_hh  # (4H,)
    i = _sigmoid(z[0:H])
    f = _sigmoid(z[H : 2 * H])
    g = np.tanh(z[2 * H : 3 * H])
    o = _sigmoid(z[3 * H : 4 * H])
    c_new = f * c + i * g
    h_new = o * np.tanh(c_new)
    return h_new, c_new


def dense_forward(layers: tuple[DenseLayer, ...], x: np.ndarray) -> np.ndarray:
    """The dense stack: ``x ← act_k(W_k x + b_k)`` for each layer k.

    Args:
        layers: the layers.
        x: (n_in,) input of the first layer.

    Returns:
        (n_out,) output of the last layer.
    """
    for layer in layers:
        x = activate(layer.activation, layer.weight @ x + layer.bias, layer.alpha)
    return x


class PolicyRunner:
    """A stateful policy controller: ``action = runner(obs)``.

    The LSTM state ``(h, c)`` is zero after construction and after :meth:`reset`, and is
    carried between calls of :meth:`apply`.

    Args:
        network: the validated network (:func:`load_policy`).
    """

    def __init__(self, network: PolicyNetwork) -> None:
        self.network = network
        H = network.lstm.hidden_size if network.lstm is not None else 0
        self.h = np.zeros(H)
        self.c = np.zeros(H)

    def reset(self) -> None:
        """Set the recurrent state to zero (start of an episode)."""
        self.h = np.zeros_like(self.h)
        self.c = np.zeros_like(self.c)

    def apply(self, obs: np.ndarray) -> np.ndarray:
        """One control step.

        Args:
            obs: (n_obs,) observation (the contract's scaled layout).

        Returns:
            (n_act,) action, float64.

        Raises:
            ValueError: ``obs`` has the wrong shape.
        """
        x = np.asarray(obs, dtype=np.float64)
        if x.shape != (self.network.n_obs,):
            raise ValueError(f"observation shape {x.shape}, expected ({self.network.n_obs},)")
        if self.network.lstm is not None:
            self.h, self.c = lstm_step(self.network.lstm, x, self.h, self.c)
            x = self.h
        return dense_forward(self.network.layers, x)

    __call__ = apply

    def rollout(self, observations: np.ndarray) -> np.ndarray:
        """Reset, then apply to each row in turn, carrying the state.

        Args:
            observations: (T, n_obs).

        Returns:
            (T, n_act) actions.
        """
        obs = np.asarray(observations, dtype=np.float64)
        if obs.ndim != 2 or obs.shape[1] != self.network.n_obs:
            raise ValueError(
                f"observations shape {obs.shape}, expected (T, {self.network.n_obs})")
        self.reset()
        out = np.empty((obs.shape[0], self.network.n_act))
        for t in range(obs.shape[0]):
            out[t] = self.apply(obs[t])
        return out


# ---------------------------------------------------------------------------------- JSON I/O


def _matrix(file: str, path: str, value: Any, shape: tuple[int | None, ...]) -> np.ndarray:
    """A numeric array at ``path`` with ``shape`` (None = any length); raises with the path."""
    if value is None:
        raise PolicyFormatError(file, path, "missing field")
    try:
        a = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise PolicyFormatError(file, path, "not a numeric array",
                                expected=f"shape {_fmt_shape(shape)}") from None
    if a.ndim != len(shape) or any(
            s is not None and s != n for s, n in zip(shape, a.shape, strict=True)):
        raise PolicyFormatError(file, path, f"shape {tuple(a.shape)} does not match",
                                expected=f"shape {_fmt_shape(shape)}")
    if not np.all(np.isfinite(a)):
        raise PolicyFormatError(file, path, "contains a non-finite number")
    return _locked(a)


def _fmt_shape(shape: tuple[int | None, ...]) -> str:
    inner = ", ".join("*" if s is None else str(s) for s in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


def _int(file: str, path: str, value: Any) -> int:
    if value is None:
        raise PolicyFormatError(file, path, "missing field")
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise PolicyFormatError(file, path, f"{value!r} is not a positive integer")
    return value


def policy_from_dict(data: Any, file: str = "<dict>") -> PolicyNetwork:
    """Validate a decoded policy JSON document and build the network.

    Args:
        data: the decoded JSON object.
        file: file name for error messages.

    Raises:
        PolicyFormatError: a field is missing, has the wrong type or shape, or names an
            unknown activation (the message names the file, the field and the valid choices).
    """
    if not isinstance(data, dict):
        raise PolicyFormatError(file, "", "top level is not a JSON object")
    if data.get("format") != FORMAT:
        raise PolicyFormatError(file, "format", f"{data.get('format')!r} is not a policy file",
                                expected=f'"{FORMAT}"')
    if data.get("version") != VERSION:
        raise PolicyFormatError(file, "version", f"unsupported version {data.get('version')!r}",
                                expected=str(VERSION))
    n_obs = _int(file, "n_obs", data.get("n_obs"))
    n_act = _int(file, "n_act", data.get("n_act"))

    lstm = None
    width = n_obs
    raw = data.get("lstm")
    if raw is not None:
        if not isinstance(raw, dict):
            raise PolicyFormatError(file, "lstm", "not an object (or null)")
        H = _int(file, "lstm.hidden_size", raw.get("hidden_size"))
        order = raw.get("gate_order", GATE_ORDER)
        if order != GATE_ORDER:
            raise PolicyFormatError(file, "lstm.gate_order", f"unsupported gate order {order!r}",
                                    choices=[GATE_ORDER], got=str(order))
        lstm = LSTMBlock(
            weight_ih=_matrix(file, "lstm.weight_ih", raw.get("weight_ih"), (4 * H, n_obs)),
            weight_hh=_matrix(file, "lstm.weight_hh", raw.get("weight_hh"), (4 * H, H)),
            bias_ih=_matrix(file, "lstm.bias_ih", raw.get("bias_ih"), (4 * H,)),
            bias_hh=_matrix(file, "lstm.bias_hh", raw.get("bias_hh"), (4 * H,)),
        )
        width = H

    raw_layers = data.get("layers")
    if raw_layers is None:
        raise PolicyFormatError(file, "layers", "missing field")
    if not isinstance(raw_layers, list) or not raw_layers:
        raise PolicyFormatError(file, "layers", "not a non-empty list of dense layers")
    layers = []
    for k, raw_layer in enumerate(raw_layers):
        where = f"layers[{k}]"
        if not isinstance(raw_layer, dict):
            raise PolicyFormatError(file, where, "not an object")
        w = _matrix(file, f"{where}.weight", raw_layer.get("weight"), (None, width))
        b = _matrix(file, f"{where}.bias", raw_layer.get("bias"), (w.shape[0],))
        act = raw_layer.get("activation")
        if act is None:
            raise PolicyFormatError(file, f"{where}.activation", "missing field",
                                    choices=ACTIVATIONS)
        if act not in ACTIVATIONS:
            raise PolicyFormatError(file, f"{where}.activation", f"unknown activation {act!r}",
                                    choices=ACTIVATIONS, got=str(act))
        alpha = raw_layer.get("alpha", 1.0)
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not np.isfinite(alpha):
            raise PolicyFormatError(file, f"{where}.alpha", f"{alpha!r} is not a finite number")
        layers.append(DenseLayer(w, b, act, float(alpha)))
        width = w.shape[0]
    if width != n_act:
        raise PolicyFormatError(file, f"layers[{len(layers) - 1}].weight",
                                f"last layer has {width} outputs", expected=f"n_act = {n_act}")

    contract = data.get("contract")
    if contract is not None:
        if not isinstance(contract, dict):
            raise PolicyFormatError(file, "contract", "not an object (or null)")
        for key, want in (("n_obs", n_obs), ("n_act", n_act)):
            if key in contract and contract[key] != want:
                raise PolicyFormatError(file, f"contract.{key}",
                                        f"{contract[key]!r} disagrees with the network",
                                        expected=str(want))
    source = data.get("source") or {}
    return PolicyNetwork(n_obs, n_act, lstm, tuple(layers), contract, source)


def _rounded(a: np.ndarray, decimals: int) -> list:
    # round, then let json print the shortest repr of each float64 (0.123457, not 0.12345699…)
    return np.round(np.asarray(a, dtype=np.float64), decimals).tolist()


def policy_to_dict(net: PolicyNetwork, decimals: int = DECIMALS) -> dict:
    """The JSON document of ``net`` with every weight rounded to ``decimals`` decimals."""
    doc: dict[str, Any] = {"format": FORMAT, "version": VERSION,
                           "n_obs": net.n_obs, "n_act": net.n_act}
    if net.lstm is None:
        doc["lstm"] = None
    else:
        doc["lstm"] = {
            "hidden_size": net.lstm.hidden_size,
            "gate_order": GATE_ORDER,
            "weight_ih": _rounded(net.lstm.weight_ih, decimals),
            "weight_hh": _rounded(net.lstm.weight_hh, decimals),
            "bias_ih": _rounded(net.lstm.bias_ih, decimals),
            "bias_hh": _rounded(net.lstm.bias_hh, decimals),
        }
    doc["layers"] = []
    for layer in net.layers:
        entry: dict[str, Any] = {"activation": layer.activation}
        if layer.activation == "elu":
            entry["alpha"] = layer.alpha
        entry["weight"] = _rounded(layer.weight, decimals)
        entry["bias"] = _rounded(layer.bias, decimals)
        doc["layers"].append(entry)
    doc["contract"] = dict(net.contract) if net.contract is not None else None
    doc["source"] = dict(net.source)
    return doc


def load_policy(path: str | Path) -> PolicyNetwork:
    """Read and validate a policy JSON file.

    Raises:
        PolicyFormatError: unreadable file, invalid JSON or an invalid document.
    """
    path = Path(path)
    try:
        text = read_text(path, "policy")
    except InputError as err:
        raise PolicyFormatError(path, "", err.problem, expected=err.expected) from None
    data = load_json(text, path, error=PolicyFormatError)
    return policy_from_dict(data, str(path))


def read_observations(path: str | Path, n_obs: int) -> np.ndarray:
    """The ``observations`` array (T, n_obs) of an npz file, as float64.

    Raises:
        InputError: unreadable or not an npz (:func:`rbc.safeio.load_npz`), no
            ``observations`` array, a wrong shape, or non-finite values (a NaN observation
            would silently poison the recurrent state and every later action).
    """
    arrays = load_npz(path, "observations")
    if "observations" not in arrays:
        raise InputError(path, "", "no array 'observations' (arrays: "
                         f"{', '.join(arrays) or 'none'})")
    obs = arrays["observations"]
    if obs.ndim != 2 or obs.shape[1] != n_obs:
        raise InputError(path, "observations", f"shape {obs.shape}, expected (T, {n_obs})")
    if obs.dtype.kind not in "biuf":
        raise InputError(path, "observations", f"dtype {obs.dtype}, expected real numbers")
    obs = np.asarray(obs, dtype=np.float64)
    bad = np.argwhere(~np.isfinite(obs))
    if bad.size:
        t, i = (int(x) for x in bad[0])
        raise InputError(path, f"observations[{t}, {i}]", f"non-finite value {float(obs[t, i])!r} "
                         f"({len(bad)} in all)", expected="finite observations")
    return obs


def save_policy(net: PolicyNetwork, path: str | Path, decimals: int = DECIMALS) -> Path:
    """Write ``net`` as policy JSON (weights rounded to ``decimals``) atomically; return the
    path."""
    path = Path(path)
    doc = policy_to_dict(net, decimals)
    atomic_write_text(path, json.dumps(doc, separators=(",", ":"), allow_nan=False) + "\n")
    return path
