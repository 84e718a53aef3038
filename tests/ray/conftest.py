"""The Ray tests' subjects travel by value: Ray workers cannot import the tests folder."""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("ray") is not None:
    import ray_support
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(ray_support)
