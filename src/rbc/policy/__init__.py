"""Neural-policy runner: the JSON policy format and its numpy runner (:mod:`.runner`), the
TorchScript reader that needs no PyTorch (:mod:`.torchscript`) and the observation/action
contract of Unitree deployment policies (:mod:`.contract`). See docs/policy.md."""
