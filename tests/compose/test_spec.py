"""The composition file: every mistake names the file and the field and exits with status
2; bundle names are plain file names looked up in one directory (no path is built from the
file's contents beyond that name)."""

from __future__ import annotations

import os

import pytest

from rbc.cli.main import main
from rbc.compose.spec import parse_composition_text
from rbc.errors import RecordError
from tests.compose.conftest import PAIR

BAD = [
    ("rbc_composition: 2\nname: x\nmembers: []\n", "rbc_composition"),
    (PAIR.replace("name: pair", "name: 'bad name'"), "name"),
    (PAIR.replace("member: h2, body: forearm_l", "member: h9, body: forearm_l"),
     "links[0].b.member"),
    (PAIR.replace("type: ball", "type: hinge"), "links[0].type"),
    (PAIR.replace("h2.sole_r]", "h2sole_r]"), "modes[0].supports[3]"),
    (PAIR.replace("links: none", "links: [hand]"), "modes[1].links[0]"),
    (PAIR.replace("{name: h2, bundle", "{name: h1, bundle"), "members[1].name"),
    (PAIR + "extra: 1\n", "extra"),
    (PAIR.replace("placement: {xyz: [0, 0.45, 0.93]}", "placement: {xyz: [0, 0.45]}"),
     "members[0].placement.xyz"),
    (PAIR.replace("rbc_composition: 1\n", "rbc_composition: 1\nname: again\n"), ""),  # dup key
]


@pytest.mark.parametrize(("text", "field"), BAD)
def test_bad_files_name_the_field(text, field):
    with pytest.raises(RecordError) as exc:
        parse_composition_text(text, "ring.yaml")
    assert exc.value.file == "ring.yaml"
    assert exc.value.path.startswith(field)


@pytest.mark.parametrize("text", ["", "# nothing\n", "- 1\n- 2\n", "42\n"])
def test_empty_or_non_mapping_file_names_the_composition_header(text):
    # a composition file is not a record: the message asks for its own header
    with pytest.raises(RecordError) as exc:
        parse_composition_text(text, "ring.yaml")
    assert exc.value.file == "ring.yaml"
    assert "composition" in str(exc.value)
    assert "rbc_composition: 1" in str(exc.value)


@pytest.mark.parametrize("name", ["../humanoid_v1.h5", "/etc/passwd", "sub/x.h5", "..", ""])
def test_bundle_names_are_plain(tmp_path, name):
    (tmp_path / "c.yaml").write_text(PAIR.replace("humanoid_v1.h5", repr(name)))
    out = tmp_path / "out.h5"
    assert main(["compose", str(tmp_path / "c.yaml"), "-o", str(out)]) == 2
    assert not out.exists()


def test_symlinked_bundle_refused(tmp_path, members_dir, capsys):
    os.symlink(members_dir / "humanoid_v1.h5", tmp_path / "humanoid_v1.h5")
    (tmp_path / "c.yaml").write_text(PAIR)
    assert main(["compose", str(tmp_path / "c.yaml"), "-o", str(tmp_path / "o.h5")]) == 2
    assert "symbolic link" in capsys.readouterr().err


def test_semantic_errors(tmp_path, members_dir, capsys):
    cases = [
        (PAIR.replace("body: forearm_r, frame: palm", "body: forearm_x, frame: palm"),
         "links[0].a.body"),
        (PAIR.replace("body: forearm_r, frame: palm", "body: forearm_r, frame: paw"),
         "links[0].a.frame"),
        (PAIR.replace("h2.sole_r]", "h2.sole_x]"), "modes[0].supports[3]"),
        (PAIR.replace("humanoid_v2.h5,", "humanoid_v2.h5, partition: other,"),
         "members[1].partition"),
        (PAIR.replace("placement: {xyz: [0, 0.45, 0.93]}",
                      "placement: {xyz: [0, 0.45, 0.93], rpy: [0.3, 0, 0]}"),
         "c.yaml: members[0].placement: member h1: the rotation tilts the member's gravity "
         "[0, 0, -9.81]"),
    ]
    for text, what in cases:
        (tmp_path / "c.yaml").write_text(text)
        out = tmp_path / "o.h5"
        code = main(["compose", str(tmp_path / "c.yaml"), "-o", str(out), "--bundles",
                     str(members_dir)])
        err = capsys.readouterr().err
        assert code == 2, (what, err)
        assert what in err and "Traceback" not in err
        assert not out.exists()


def test_output_never_overwrites_an_input(members_dir):
    assert main(["compose", str(members_dir / "pair.yaml"), "-o",
                 str(members_dir / "humanoid_v1.h5")]) == 2
