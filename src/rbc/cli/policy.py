"""``rbc policy``: import TorchScript policies to JSON (without torch) and replay them.

Parses options, calls :mod:`rbc.policy.runner`, :mod:`rbc.policy.torchscript` and
:mod:`rbc.policy.contract`, prints. Registered by ``rbc.cli.main`` as
``app.add_typer(policy_app, name="policy")``. See docs/policy.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

app = typer.Typer(help="Neural policies: import TorchScript to JSON, replay rollouts.",
                  no_args_is_help=True)


@app.command("import")
def import_(
    file: Path = typer.Argument(..., help="TorchScript (or torch.save) .pt archive"),
    out: Path = typer.Option(..., "-o", "--out", help="policy JSON to write"),
    config: Path | None = typer.Option(
        None, "--config", help="deploy yaml with the observation/action contract (default: "
                               "deploy_mujoco/configs/<robot>.yaml beside pre_train/<robot>/)"),
    activation: str | None = typer.Option(
        None, "--activation", help="hidden activation of a plain state dict (tanh, relu, elu)"),
    json_out: bool = typer.Option(False, "--json", help="machine-readable summary"),
) -> None:
    """Read FILE with a restricted unpickler (tensor records only) and write policy JSON."""
    from rbc.errors import UsageError
    from rbc.policy.contract import (
        ContractError,
        contract_from_deploy_config,
        find_deploy_config,
    )
    from rbc.policy.runner import ACTIVATIONS, PolicyNetwork, save_policy
    from rbc.policy.torchscript import network_from_archive, read_torchscript
    from rbc.safeio import check_outputs

    check_outputs({"FILE": file, "--config": config}, {"-o": out})
    if activation is not None and activation not in ACTIVATIONS:
        raise UsageError(f"--activation {activation!r}: valid choices: {', '.join(ACTIVATIONS)}")
    net = network_from_archive(read_torchscript(file), activation)
    cfg = config if config is not None else find_deploy_config(file)
    check_outputs({"FILE": file, "the deploy config": cfg}, {"-o": out})
    contract = None
    if cfg is not None:
        contract = contract_from_deploy_config(cfg)
        for key, want in (("n_obs", net.n_obs), ("n_act", net.n_act)):
            if contract[key] != want:
                raise ContractError(cfg, "num_obs" if key == "n_obs" else "num_actions",
                                    f"{contract[key]} disagrees with the network in {file}",
                                    expected=str(want))
    elif not json_out:
        typer.echo("note: no deploy config found (--config); writing no contract", err=True)
    net = PolicyNetwork(net.n_obs, net.n_act, net.lstm, net.layers, contract, net.source)
    save_policy(net, out)
    summary = {
        "file": str(out),
        "n_obs": net.n_obs,
        "n_act": net.n_act,
        "lstm_hidden": net.lstm.hidden_size if net.lstm is not None else None,
        "layers": [[int(layer.weight.shape[1]), int(layer.weight.shape[0]), layer.activation]
                   for layer in net.layers],
        "contract": str(cfg) if cfg is not None else None,
    }
    if json_out:
        typer.echo(json.dumps(summary))
        return
    arch = " → ".join(
        ([f"LSTM({net.n_obs}→{net.lstm.hidden_size})"] if net.lstm is not None else [])
        + [f"Linear({i}→{o}) {a}" for i, o, a in summary["layers"]])
    typer.echo(f"{file.name}: {arch}")
    typer.echo(f"contract: {cfg}" if cfg is not None else "contract: none")
    typer.echo(f"wrote {out}")


@app.command("eval")
def eval_(
    file: Path = typer.Argument(..., help="policy JSON"),
    observations: Path = typer.Option(..., "--observations",
                                      help="npz with array 'observations' (T, n_obs)"),
    out: Path = typer.Option(..., "-o", "--out", help="npz to write with array 'actions'"),
    json_out: bool = typer.Option(False, "--json", help="machine-readable summary"),
) -> None:
    """Replay a recurrent rollout: reset the state, then apply to each observation in turn."""
    from rbc.policy.runner import PolicyRunner, load_policy, read_observations
    from rbc.safeio import check_outputs, save_npz

    check_outputs({"FILE": file, "--observations": observations}, {"-o": out})
    net = load_policy(file)
    obs = read_observations(observations, net.n_obs)
    actions = PolicyRunner(net).rollout(obs)
    save_npz(out, actions=actions)
    if json_out:
        typer.echo(json.dumps({"file": str(out), "steps": int(actions.shape[0]),
                               "n_act": int(actions.shape[1])}))
        return
    typer.echo(f"{actions.shape[0]} steps, {actions.shape[1]} actions each; wrote {out}")
