"""The published figures each target is compared with: data, not code.

``published/<target>.yaml`` (package data) lists every figure the target reports in its
comparison table::

    target: ff-ablation
    figures:
      - key: stewart.pd.platform_rms          # the Outcome.figures key of ours
        figure: Stewart platform position RMS, PD at the ports
        unit: mm
        paper: 2.375                           # null: not published
        paper_robot: the paper's Stewart platform (hardware)
        ours_robot: records/stewart.yaml on MuJoCo
        compare: ratio                         # ratio (ours / paper) | difference (ours − paper)
        source: issue 6 acceptance text ("the source paper reports 2.375 → 0.717 mm")

Every number has its ``source``; where the issues and DESIGN.md give none, ``paper`` is null
and the source says so ("not published"). Nothing is estimated or invented.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

from rbc.safeio import load_yaml

COMPARE = ("ratio", "difference")


@dataclass(frozen=True)
class Published:
    """One published figure (module docstring for the fields)."""

    key: str
    figure: str
    unit: str
    paper: float | None
    paper_robot: str
    ours_robot: str
    compare: str
    source: str


def load_published(target: str) -> tuple[Published, ...]:
    """The published figures of ``target`` (empty when it has no table).

    Raises:
        ValueError: a malformed table (see :func:`parse_published`).
    """
    path = resources.files("rbc.repro") / "published" / f"{target}.yaml"
    if not path.is_file():
        return ()
    return parse_published(path.read_text(encoding="utf-8"), target, str(path))


def parse_published(text: str, target: str, where: str = "<string>") -> tuple[Published, ...]:
    """Parse a published-figures table (module docstring).

    Raises:
        ValueError: a malformed table — a bug in the repository's data: another target, a
            missing field, an unknown ``compare``, a non-numeric ``paper``, a repeated key.
    """
    doc = load_yaml(text, where)
    if not isinstance(doc, dict) or doc.get("target") != target:
        raise ValueError(f"{where}: expected a mapping with `target: {target}`")
    out, seen = [], set()
    for i, entry in enumerate(doc.get("figures") or []):
        at = f"{where}: figures[{i}]"
        if not isinstance(entry, dict):
            raise ValueError(f"{at}: expected a mapping")
        missing = [f for f in Published.__dataclass_fields__ if f not in entry]
        if missing:
            raise ValueError(f"{at}: missing {', '.join(missing)}")
        if entry["compare"] not in COMPARE:
            raise ValueError(f"{at}.compare: '{entry['compare']}', valid: {', '.join(COMPARE)}")
        paper = entry["paper"]
        if paper is not None and (isinstance(paper, bool) or not isinstance(paper, (int, float))):
            raise ValueError(f"{at}.paper: expected a number or null, got {paper!r}")
        if entry["key"] in seen:
            raise ValueError(f"{at}.key: '{entry['key']}' is listed twice")
        seen.add(entry["key"])
        out.append(Published(str(entry["key"]), str(entry["figure"]), str(entry["unit"]),
                             None if paper is None else float(paper),
                             str(entry["paper_robot"]), str(entry["ours_robot"]),
                             entry["compare"], str(entry["source"])))
    return tuple(out)
