"""The reproduction harness behind ``make repro`` and ``rbc repro`` (DESIGN.md §14,
docs/repro.md).

A *target* recomputes one table or figure of the source papers from the shipped records
and writes ``artifacts/repro/<target>/``: ``report.md`` (the paper's figure beside ours
with their ratio or difference, and what differs in the setup), ``results.json``
(machine-readable, with the rbc version, the git commit of the source, package versions
and seeds) and PNG plots; ``artifacts/repro/index.md`` has one line per target.

* :mod:`.registry` — the targets by name (one line each);
* :mod:`.harness` — the context a target runs in (quick or full case list, its output
  directory, Dask bags on one shared cluster) and the :class:`~.harness.Outcome` it returns;
  running targets and recording failures;
* :mod:`.report` — the shared writer (report, results, index, provenance);
* :mod:`.published` — the published figures, data in ``published/<target>.yaml`` with the
  source of every number ("not published" where the sources give none);
* :mod:`.plots` — figures with labelled axes and units (checked when saved);
* :mod:`.models` — the shipped records compiled once per worker process, reference motions;
* one module per target: :mod:`.table5_solvers`, :mod:`.table6_compute`,
  :mod:`.fig6_curvature`, :mod:`.ff_ablation`, :mod:`.walkers`.

Adding a target: a module here with ``TITLE`` and ``run(ctx) -> Outcome``, one line in
:data:`rbc.repro.registry.TARGETS`, and ``published/<target>.yaml``.
"""
