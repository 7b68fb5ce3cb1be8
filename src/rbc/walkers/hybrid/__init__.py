"""Walker models and hybrid dynamics: the lumped-mass model from one matrix ``A``
(:mod:`.model`), the model files with their reader and validation (``models/*.yaml``,
:mod:`.modelfile`, :mod:`.registry`), the swing phase (:mod:`.swing`), rigid impacts and
relabeling (:mod:`.impact`, :mod:`.foot` for the footed walker's sole) and the point-foot
hybrid simulation (:mod:`.simulate`). Imports nothing from the other walker sub-packages.
See docs/walkers.md §1-4, §8."""
