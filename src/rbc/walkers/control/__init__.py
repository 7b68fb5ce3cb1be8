"""Walker controllers and safety: the built-in registry (:mod:`.controllers`), virtual
constraints and feedback linearization (:mod:`.vc`), what a controller may know
(:mod:`.context`), the footed walker under its phase controllers (:mod:`.footed`,
:mod:`.footed_gait`), controllers on the error hierarchy (:mod:`.learning`), the LbDNN
adaptive controller (:mod:`.lbdnn`) and the safety filter (:mod:`.safety`). Imports only
:mod:`rbc.walkers.hybrid`. See docs/walkers.md §5-6, §13-14."""
