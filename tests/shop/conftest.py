"""The ``live_local`` marker: an end-to-end live session on the packaged local model takes
minutes on a CPU, so it runs only when selected (``-m live_local``), never by default."""

import pytest


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "live_local: a whole live session on the packaged local model (minutes on CPU)"
    )


def pytest_collection_modifyitems(config, items):
    if "live_local" in (config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="a live session on the local model: select with -m live_local")
    for item in items:
        if "live_local" in item.keywords:
            item.add_marker(skip)
