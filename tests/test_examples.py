"""The gallery examples run anywhere skfm is installed, and stay small.

Read, never run (the documentation build runs them): each ``examples/plot_*.py`` reads data
that ships with skfm or its dependencies, never a path outside the package (``../``,
``shared/data``) or the network, and sizes every skfm estimator to take seconds.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("plot_*.py"))
OUTSIDE = ("../", "..\\", "shared/data", "hf://")
# the most each skfm constructor may ask for, keyword by keyword (the TabSwift estimators
# must say how many members: their default of 8 is for accuracy, not for a gallery)
LIMITS = {
    "TabSwiftClassifier": {"n_estimators": 4},
    "TabSwiftRegressor": {"n_estimators": 4},
    "TabMGPRegressor": {"n_rollouts": 50, "horizon": 250},
}
REQUIRED = {"TabSwiftClassifier": "n_estimators", "TabSwiftRegressor": "n_estimators"}
MAX_ROWS = 5000  # n_samples of a generated table


def _calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            yield name, node


def problems(source: str) -> list[str]:
    """What makes an example unfit for the gallery, one line per problem."""
    found = [f"names a path outside the package or the network: {marker!r}"
             for marker in OUTSIDE if marker in source]
    tree = ast.parse(source)
    for name, call in _calls(tree):
        keywords = {k.arg: k.value for k in call.keywords if k.arg}
        if name.startswith("fetch_") or any(
                isinstance(arg, ast.Constant) and str(arg.value).startswith(("http:", "https:"))
                for arg in [*call.args, *keywords.values()]):
            found.append(f"{name}() downloads its data")
        if name in REQUIRED and REQUIRED[name] not in keywords:
            found.append(f"{name} without {REQUIRED[name]}=")
        if name == "TabMGPRegressor" and not (call.args or "estimator" in keywords):
            found.append("TabMGPRegressor with its default 8-member base")
        if name == "SPNClassifier" and not (call.args or "estimator" in keywords):
            found.append("SPNClassifier with its default 8-member base")
        for keyword, limit in LIMITS.get(name, {}).items():
            value = keywords.get(keyword)
            if value is not None and not (isinstance(value, ast.Constant)
                                          and isinstance(value.value, int)
                                          and value.value <= limit):
                found.append(f"{name}({keyword}={ast.unparse(value)}): at most {limit}")
        rows = keywords.get("n_samples")
        if rows is not None and not (isinstance(rows, ast.Constant) and rows.value <= MAX_ROWS):
            found.append(f"{name}(n_samples={ast.unparse(rows)}): at most {MAX_ROWS}")
    return found


def test_the_gallery_has_examples():
    assert len(EXAMPLES) >= 9 and any(path.name == "plot_spn.py" for path in EXAMPLES)


@pytest.mark.parametrize("path", EXAMPLES, ids=[path.name for path in EXAMPLES])
def test_an_example_reads_shipped_data_and_stays_small(path):
    assert problems(path.read_text(encoding="utf-8")) == []


def test_the_check_finds_each_kind_of_problem():
    source = '''
import pandas as pd
from sklearn.datasets import fetch_openml, make_classification
folder = "../shared/data/strategic/credit"
X, y = make_classification(n_samples=100_000)
TabSwiftClassifier().fit(X, y)
TabSwiftRegressor(n_estimators=8)
TabMGPRegressor(n_rollouts=n, horizon=100)
SPNClassifier(budget=0.5)
fetch_openml("adult")
pd.read_csv("https://example.org/credit.csv")
'''
    assert sorted(problems(source)) == sorted([
        "names a path outside the package or the network: '../'",
        "names a path outside the package or the network: 'shared/data'",
        "make_classification(n_samples=100000): at most 5000",
        "TabSwiftClassifier without n_estimators=",
        "TabSwiftRegressor(n_estimators=8): at most 4",
        "TabMGPRegressor with its default 8-member base",
        "TabMGPRegressor(n_rollouts=n): at most 50",
        "SPNClassifier with its default 8-member base",
        "fetch_openml() downloads its data",
        "read_csv() downloads its data",
    ])
