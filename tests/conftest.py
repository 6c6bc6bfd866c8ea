"""Shared pytest hooks."""

import collections

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


HOSTILE_CASES = pytest.StashKey[collections.Counter]()


@pytest.fixture(scope="session")
def hostile_case_counter(request) -> collections.Counter:
    """Counts the hostile-input cases tests/test_hardening.py runs per estimator."""
    return request.config.stash.setdefault(HOSTILE_CASES, collections.Counter())


def pytest_terminal_summary(terminalreporter, config):
    """Print the number of hostile-input cases tried per estimator."""
    counts = config.stash.get(HOSTILE_CASES, None)
    if not counts:
        return
    terminalreporter.write_sep("-", "hostile-input cases tried per estimator")
    for name, count in sorted(counts.items()):
        terminalreporter.write_line(f"{name}: {count}")
