"""Judge backends, one file each, behind the base class in `base`; `build_backend` picks one by `judge.backend`."""
