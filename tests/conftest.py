"""Shared pytest hooks."""

import collections
import os
import sys

import pytest

CUDA_SKIP_REASON = "needs a CUDA device"

# The one tolerance for results computed under different settings: another torch thread
# count, n_jobs, or a process with other settings (docs/robustness.md, "Reproducibility").
# float32 sums split across threads round differently in their last bits (1 ulp is 6e-8
# relative; an AMD host showed 2.4e-7 absolute on forecasts of order 1); a few layers of a
# network grow that to ~1e-6 at most. A real bug (a race, a wrong weight, a lost row) moves
# outputs by 1e-3 or more. Bit-identity is asserted only at the same thread count, on the
# same device.
CROSS_SETTING_TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """Mark every test skipped for want of a CUDA device as ``cuda``, so ``-m cuda`` selects it.

    tests/_backend/test_backend.py skips its GPU tests with a plain ``skipif``; this lets
    ``pytest -m cuda tests/_backend/test_backend.py`` run them on a GPU machine.
    """
    for item in items:
        for mark in item.iter_markers("skipif"):
            if mark.kwargs.get("reason") == CUDA_SKIP_REASON:
                item.add_marker(pytest.mark.cuda)
                break


def _spark_unavailable() -> str | None:
    """Why a local Spark session cannot start here, or None when it can."""
    import shutil
    import subprocess

    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed (the `spark` extra)"
    if shutil.which("java") is None:
        return "Java is not installed (Spark needs a JVM)"
    if subprocess.run(["java", "-version"], capture_output=True).returncode != 0:
        return "java -version fails"
    return None


@pytest.fixture(scope="session")
def spark():
    """A one-core local Spark session (skipped, with the reason, where Spark cannot run)."""
    reason = _spark_unavailable()
    if reason:
        pytest.skip(reason)
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Python workers import skfm
    session = (SparkSession.builder.master("local[1]").appName("skfm-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .getOrCreate())
    yield session
    session.stop()


HOSTILE_CASES = pytest.StashKey[collections.Counter]()


@pytest.fixture(scope="session")
def hostile_case_counter(request) -> collections.Counter:
    """Counts the hostile-input cases tests/test_hardening.py runs per estimator."""
    return request.config.stash.setdefault(HOSTILE_CASES, collections.Counter())


def pytest_terminal_summary(terminalreporter, config):
    """Print the random test order's seed, and the number of hostile-input cases tried per
    estimator."""
    if config.pluginmanager.has_plugin("randomly"):  # -q hides pytest-randomly's own header
        seed = config.getoption("randomly_seed")
        terminalreporter.write_line(f"test order: --randomly-seed={seed} repeats it")
    counts = config.stash.get(HOSTILE_CASES, None)
    if not counts:
        return
    terminalreporter.write_sep("-", "hostile-input cases tried per estimator")
    for name, count in sorted(counts.items()):
        terminalreporter.write_line(f"{name}: {count}")


@pytest.fixture(scope="module")
def one_thread():
    """One torch thread for a whole test module: tiny tensors gain nothing from more, and the
    CI box is shared. A module asks for it with ``pytestmark = pytest.mark.usefixtures("one_thread")``."""
    from skfm._backend import threads

    with threads(1):
        yield


@pytest.fixture(scope="module")
def classification():
    """600 training rows of 3 classes and 200 test rows, 6 features: a table "large" for a
    context of 128 rows (the blend and retrieval tests)."""
    from sklearn.datasets import make_classification

    X, y = make_classification(800, 6, n_informative=4, n_classes=3, random_state=0)
    return X[:600], y[:600], X[600:]


@pytest.fixture(scope="module")
def sine_panel():
    """Two classes of noisy sines (3 vs 6 cycles), 3 channels, length 80: 40 series to fit,
    20 to predict, as ``(X, y, X_test, y_test)``."""
    import numpy as np

    rng = np.random.default_rng(0)
    t = np.linspace(0, 1, 80)
    y = np.tile([0, 1], 30)
    base = np.sin(2 * np.pi * (3 + 3 * y[:, None]) * t + rng.uniform(0, 6, (60, 1)))
    X = base[:, None, :] * np.array([1.0, 2.0, -1.0])[None, :, None]
    X = X + 0.2 * rng.normal(size=X.shape)
    return X[:40], y[:40], X[40:], y[40:]
