"""``rbc view``: the scene (closed poses, chords, frames), the page, the CLI and the server."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request

import numpy as np
import pinocchio as pin
import pytest

from rbc.cli.main import main
from rbc.compiler import compile_to_file
from rbc.ir import spatial as sp
from rbc.model.compiled import CompiledModel
from rbc.view.page import render_page, scene_json
from rbc.view.scene import build_scene, sample_frames
from rbc.view.serve import make_server
from tests.conftest import RECORDS


@pytest.fixture(scope="module")
def stewart(tmp_path_factory):
    path = tmp_path_factory.mktemp("view") / "stewart.h5"
    compile_to_file(RECORDS / "stewart.yaml", path)
    return path


def _world(pose: list[float]) -> pin.SE3:
    return pin.SE3(sp.rotation_from_quat(np.array(pose[3:])), np.array(pose[:3]))


def test_drawn_poses_close_every_cut_joint(stewart):
    """The two sides of each cut joint, placed by the drawn body poses, meet: the scene
    draws the assembled mechanism, not a tree with gaps."""
    model = CompiledModel.from_bundle(stewart)
    scene = build_scene(model, model.partitions["default"].q_ref)
    pose = scene["frames"]["pose"][0]
    index = {b.name: i for i, b in enumerate(model.record.bodies)}
    cut = {model.edge_names[k] for k in model.chord_edges}
    assert {c["joint"] for c in scene["chords"]} == cut and len(cut) == 5
    for j in model.record.joints:
        if j.type not in ("revolute", "universal", "spherical", "fixed"):
            continue  # the origins of a translating joint are apart by its stroke
        a = _world(pose[index[j.parent]]).act(np.array(j.parent_frame.xyz))
        b = _world(pose[index[j.child]]).act(np.array(j.child_frame.xyz))
        # poses are rounded to 1e-9 m in the scene; closure holds to ~1e-12 m
        assert np.linalg.norm(a - b) < 1e-8, j.name
    drawn = {j["name"]: j["cut"] for j in scene["joints"]}
    assert {n for n, c in drawn.items() if c} == cut
    for c in scene["chords"]:  # each closure path runs through tree joints only
        assert c["path"] and not set(c["path"]) & cut


def test_stick_figure_when_no_geometry_and_frames(stewart):
    model = CompiledModel.from_bundle(stewart)
    scene = build_scene(model, model.partitions["default"].q_ref)
    assert all(not b["shapes"] for b in scene["bodies"])
    assert sum(len(b["sticks"]) for b in scene["bodies"]) >= 18  # a rod per joint end
    assert [t["name"] for t in scene["tasks"]] == [t.name for t in model.record.tasks]


def test_frames_are_sampled_evenly_and_keep_the_ends():
    idx = sample_frames(np.linspace(0, 10, 5001), limit=600)
    assert idx[0] == 0 and idx[-1] == 5000 and len(idx) <= 600
    steps = np.diff(idx)
    assert steps.max() - steps.min() <= 1
    assert list(sample_frames(np.arange(3.0))) == [0, 1, 2]


def test_scene_json_cannot_close_the_script_element():
    text = scene_json({"title": "</script><script>alert(1)</script>", "x": [1.0]})
    assert "</" not in text and json.loads(text)["title"].startswith("</script>")
    page = render_page({"title": "a<b", "frames": {"time": [0.0], "pose": [[]]}})
    assert "<title>rbc view — a&lt;b</title>" in page
    with pytest.raises(ValueError):
        scene_json({"x": float("nan")})


def test_cli_save_writes_one_offline_page(stewart, tmp_path, capsys):
    out = tmp_path / "view.html"
    assert main(["view", str(stewart), "--save", str(out)]) == 0
    page = out.read_text()
    assert "three-src" in page and "scene-data" in page
    assert not re.search(r"(src|href)=\"(https?:)?//", page)  # nothing fetched from the net
    capsys.readouterr()


def test_cli_refuses_bad_outputs_and_logs(stewart, tmp_path, capsys):
    assert main(["view", str(stewart), "--save", str(stewart)]) == 2
    assert "refusing to overwrite an input" in capsys.readouterr().err
    assert main(["view", str(stewart), "--save", str(tmp_path / "v.png")]) == 2
    assert ".html" in capsys.readouterr().err
    junk = tmp_path / "log.h5"
    junk.write_text("not hdf5")
    assert main(["view", str(stewart), "--log", str(junk), "--save",
                 str(tmp_path / "v.html")]) == 2
    err = capsys.readouterr().err
    assert "not a readable simulation log" in err and "Traceback" not in err
    assert not (tmp_path / "v.html").exists()


def test_log_playback_of_a_reduced_run(tmp_path, capsys):
    bundle = tmp_path / "fourbar.h5"
    compile_to_file(RECORDS / "fourbar.yaml", bundle)
    run = tmp_path / "run"
    assert main(["simulate", str(bundle), "--controller", "passive", "--set", "A=0.5",
                 "--duration", "0.05", "--out", str(run)]) == 0
    out = tmp_path / "v.html"
    assert main(["view", str(bundle), "--log", str(run), "--save", str(out)]) == 0
    capsys.readouterr()
    data = re.search(r'id="scene-data" type="application/json">(.*?)</script>',
                     out.read_text(), re.S).group(1)
    frames = json.loads(data)["frames"]
    assert len(frames["time"]) > 10 and frames["time"][-1] == pytest.approx(0.05)
    moving = np.asarray(frames["pose"])[:, :, :3]
    assert np.ptp(moving, axis=0).max() > 1e-4  # the crank swings


def test_server_serves_the_page_on_loopback_only():
    import threading

    server = make_server("<html>ok</html>", 0)
    host, port = server.server_address[:2]
    assert host == "127.0.0.1"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/") as r:
            assert r.read() == b"<html>ok</html>"
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/../etc/passwd")
    finally:
        server.shutdown()
        server.server_close()


def _frames(path) -> np.ndarray:
    data = re.search(r'id="scene-data" type="application/json">(.*?)</script>',
                     path.read_text(), re.S).group(1)
    return np.asarray(json.loads(data)["frames"]["pose"])[:, :, :3]


def test_log_playback_of_every_backend(stewart, tmp_path, capsys):
    """MuJoCo's qpos and Pinocchio's tree q are read back into rbc coordinates (they were
    refused: only reduced runs played). The three runs of one reference draw the same
    motion: the platform moves 2 mm in the 0.3 s, the body origins agree within 0.1 mm
    (measured 3.6 µm: the engines track the reference to µm; a readback that kept q_ref
    would differ by the whole 2 mm)."""
    frames = {}
    for backend in ("reduced", "mujoco", "pinocchio"):
        run = tmp_path / backend
        assert main(["simulate", str(stewart), "--backend", backend, "--reference",
                     str(RECORDS / "references/stewart.csv"), "--duration", "0.3",
                     "--out", str(run)]) == 0
        out = tmp_path / f"{backend}.html"
        assert main(["view", str(stewart), "--log", str(run), "--save", str(out)]) == 0
        frames[backend] = _frames(out)
    capsys.readouterr()
    assert np.ptp(frames["reduced"], axis=0).max() > 1e-3
    for backend in ("mujoco", "pinocchio"):
        assert frames[backend].shape == frames["reduced"].shape
        assert np.abs(frames[backend] - frames["reduced"]).max() < 1e-4
