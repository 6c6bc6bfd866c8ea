"""Shared pytest hooks."""

import pytest

CUDA_SKIP_REASON = "needs a CUDA device"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """Mark every test skipped for want of a CUDA device as ``cuda``, so ``-m cuda`` selects it.

    tests/test_backend.py skips its GPU tests with a plain ``skipif``; this lets
    ``pytest -m cuda tests/test_backend.py`` run them on a GPU machine.
    """
    for item in items:
        for mark in item.iter_markers("skipif"):
            if mark.kwargs.get("reason") == CUDA_SKIP_REASON:
                item.add_marker(pytest.mark.cuda)
                break
