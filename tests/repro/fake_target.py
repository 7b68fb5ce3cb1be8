"""A reproduction target for the harness tests: one bag whose case 2 raises, one plot, one
check; ``MODE`` switches it to raising as a whole or to an unlabelled plot."""

from __future__ import annotations

from rbc.repro.outcome import Outcome, Table
from rbc.repro.plots import pyplot, save
from rbc.verify.checks import make_check

TITLE = "A fake target"
MODE = {"raise": False, "unlabelled": False, "fail_case": True}


def square(x: int) -> int:
    if x == 2 and MODE["fail_case"]:
        raise ValueError("two is refused")
    return x * x


def run(ctx) -> Outcome:
    if MODE["raise"]:
        raise RuntimeError("the fake target broke")
    values = ctx.bag(square, list(range(4 if ctx.quick else 6)), "squares")
    plt = pyplot()
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    if not MODE["unlabelled"]:
        ax.set_xlabel("time [s]")
        ax.set_ylabel("height [m]")
    plot = save(fig, ctx.file("line.png"))
    done = [v for v in values if v is not None]
    return Outcome(figures={"count": float(len(done)), "sum": float(sum(done))},
                   key_figures=f"{len(done)} squares", setup="Nothing differs.",
                   tables=[Table("squares", ("x", "x²"), tuple((str(i), str(v))
                                                              for i, v in enumerate(values)))],
                   checks=[make_check("fake.sum", sum(done), 100, "1")], plots=[plot],
                   data={"values": values}, seeds={"none": 0})
