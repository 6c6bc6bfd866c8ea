"""The package's architecture rules, checked on the source with ``ast`` (docs/architecture.rst).

Every import of an skfm module counts, at module level or inside a function (a deferred
import still ties two modules together); only imports under ``if TYPE_CHECKING:`` do not,
since they never run.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import skfm

PACKAGE = Path(skfm.__file__).resolve().parent

#: The layers, bottom to top; a module may import from its own layer and those below.
LAYER_NAMES = ("shared", "model", "estimators", "methods", "commands", "face")

#: Every module's layer ("pkg.*": the package and everything in it). A new module must be
#: placed here, where its imports allow.
LAYERS = {
    # shared machinery: devices, checkpoints and the one model loader, checks, progress
    "skfm._backend.*": "shared",
    "skfm._weights.*": "shared",
    "skfm._validation": "shared",
    "skfm._progress": "shared",
    "skfm._selection": "shared",
    "skfm._optional": "shared",
    "skfm._finetune": "shared",
    "skfm._version": "shared",
    "skfm.weights": "shared",
    "skfm.timeseries._panel": "shared",
    # model code: torch modules, their data preparation, the relational SQL machinery
    "skfm.tabular.model.*": "model",
    "skfm.timeseries.mantis.model": "model",
    "skfm.timeseries.mantis.loading": "model",
    "skfm.timeseries.mantis.embedding": "model",
    "skfm.timeseries.mantis.fusion": "model",
    "skfm.timeseries.mantis.late_fusion": "model",
    "skfm.timeseries.mantis.head": "model",
    "skfm.timeseries.mantis.training": "model",
    "skfm.timeseries.mantis.runtime": "model",
    "skfm.timeseries.forecasting.backbone": "model",
    "skfm.timeseries.forecasting.adapters": "model",
    "skfm.timeseries.forecasting.base": "model",
    "skfm.timeseries.forecasting.combination": "model",
    "skfm.timeseries.forecasting.complexity": "model",
    "skfm.timeseries.forecasting._plain_state": "model",
    "skfm.timeseries.forecasting.loading": "model",
    "skfm.timeseries.forecasting.checks": "model",
    "skfm.timeseries.forecasting.network": "model",
    "skfm.timeseries.forecasting.guard": "model",
    "skfm.timeseries.forecasting.batched": "model",
    "skfm.timeseries.forecasting.direct": "model",
    "skfm.timeseries.forecasting.selection": "model",
    "skfm.timeseries.forecasting.training": "model",
    "skfm.timeseries.chaotic": "model",
    "skfm.relational.kinds": "model",
    "skfm.relational.storage": "model",
    "skfm.relational.database": "model",
    "skfm.relational.sql": "model",
    "skfm.relational.plan": "model",
    "skfm.relational.schema": "model",
    "skfm.relational.engines": "model",
    "skfm.relational.inputs": "model",
    "skfm.relational.features": "model",
    "skfm.relational.datasets": "model",
    # estimators (thin scikit-learn / sktime wrappers), and pretraining beside them
    "skfm.tabular.batching": "estimators",
    "skfm.tabular.predictive": "estimators",
    "skfm.tabular.encoding": "estimators",
    "skfm.tabular.power": "estimators",
    "skfm.tabular.ensemble": "estimators",
    "skfm.tabular.base": "estimators",
    "skfm.tabular.losses": "estimators",
    "skfm.tabular.finetune": "estimators",
    "skfm.tabular.blend": "estimators",
    "skfm.tabular.retrieval": "estimators",
    "skfm.tabular.guard": "estimators",
    "skfm.tabular.classifier": "estimators",
    "skfm.tabular.contexts": "estimators",
    "skfm.tabular.regressor": "estimators",
    "skfm.timeseries.mantis": "estimators",
    "skfm.timeseries.mantis.frozen": "estimators",
    "skfm.timeseries.mantis.classifier": "estimators",
    "skfm.timeseries.mantis.transformer": "estimators",
    "skfm.timeseries.mantis.sktime": "estimators",
    "skfm.timeseries.forecasting": "estimators",
    "skfm.timeseries.forecasting.parts": "estimators",
    "skfm.timeseries.forecasting.forecaster": "estimators",
    "skfm.timeseries": "estimators",
    "skfm.relational": "estimators",
    "skfm.relational.encoder": "estimators",
    "skfm.pretrain.*": "estimators",
    # methods built on the estimators
    "skfm.tabular.strategic.*": "methods",
    "skfm.tabular.martingale.*": "methods",
    "skfm.tabular": "methods",
    "skfm.batch": "methods",
    # command line and demos
    "skfm.cli": "commands",
    "skfm._commands": "commands",
    "skfm._bench": "commands",
    "skfm.timeseries.demo": "commands",
    "skfm.relational.demo": "commands",
    # the package face: public classes only, imported by nothing inside skfm
    "skfm": "face",
}

#: Modules that may import skfm.pretrain: pretraining itself and the command line.
PRETRAIN_USERS = ("skfm.pretrain", "skfm.cli")

#: Private names (``_x``) imported from outside the importer's own subpackage, as
#: (importer, imported name), that were there when this rule came (none were left): an
#: entry is removed when fixed, none is added, so the count only goes down.
KNOWN_PRIVATE_IMPORTS: set[tuple[str, str]] = set()


def _module_names() -> dict[str, Path]:
    names = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = ("skfm", *path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


MODULES = _module_names()
PACKAGES = {name for name, path in MODULES.items() if path.name == "__init__.py"}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


class _Imports(ast.NodeVisitor):
    """``(line, dotted name imported)`` for every import of the module that can run."""

    def __init__(self, module: str):
        self.package = module if module in PACKAGES else module.rpartition(".")[0]
        self.found: list[tuple[int, str]] = []

    def visit_If(self, node: ast.If) -> None:
        for child in node.orelse if _is_type_checking(node.test) else (*node.body, *node.orelse):
            self.visit(child)

    def visit_Import(self, node: ast.Import) -> None:
        self.found += [(node.lineno, alias.name) for alias in node.names]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            parts = self.package.split(".")
            parts = parts[: len(parts) - node.level + 1]
            base = ".".join(parts + ([node.module] if node.module else []))
        self.found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]


def _imports(module: str) -> list[tuple[int, str]]:
    """The skfm names ``module`` imports: ``(line, "skfm.pkg.module.name")``."""
    visitor = _Imports(module)
    visitor.visit(ast.parse(MODULES[module].read_text(encoding="utf-8")))
    return [(line, name) for line, name in visitor.found if name.split(".")[0] == "skfm"]


def _target(name: str) -> str:
    """The module an imported dotted name lives in (a module itself, or its defining module)."""
    while name not in MODULES:
        name = name.rpartition(".")[0]
    return name


GRAPH = {module: {(line, name) for line, name in _imports(module)} for module in MODULES}
EDGES = {module: {_target(name) for _, name in found} - {module}
         for module, found in GRAPH.items()}


def _layer(module: str) -> str:
    if module in LAYERS:
        return LAYERS[module]
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        key = ".".join(parts[:end]) + ".*"
        if key in LAYERS:
            return LAYERS[key]
    raise KeyError(module)


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_every_module_has_a_layer():
    unplaced = []
    for module in MODULES:
        try:
            _layer(module)
        except KeyError:
            unplaced.append(module)
    assert not unplaced, f"place these modules in LAYERS of {__file__}: {unplaced}"
    assert set(LAYERS.values()) <= set(LAYER_NAMES)


def test_imports_point_down():
    """A module imports only from its own layer or the layers below it."""
    upward = []
    for module, found in GRAPH.items():
        level = LAYER_NAMES.index(_layer(module))
        for line, name in sorted(found):
            target = _target(name)
            if LAYER_NAMES.index(_layer(target)) > level:
                upward.append(f"{MODULES[module].relative_to(PACKAGE.parent)}:{line} "
                              f"({_layer(module)}) imports {name} ({_layer(target)})")
    assert not upward, "imports pointing up:\n" + "\n".join(upward)


def test_nothing_imports_the_package_face():
    """``skfm/__init__.py`` re-exports the public classes for users; no skfm module imports
    it (``import skfm``, ``from skfm import X``): import from the defining module."""
    found = [f"{module}: {name}" for module, names in GRAPH.items() if module != "skfm"
             for _, name in names if _target(name) == "skfm"]
    assert not found, found


def test_inference_never_imports_pretrain():
    """Only pretraining and the command line import ``skfm.pretrain``: inference finds the
    named configs and the model loader in ``skfm._weights``."""
    found = [f"{module}: {name}" for module, names in GRAPH.items()
             if not any(_inside(module, user) for user in PRETRAIN_USERS)
             for _, name in names if _inside(_target(name), "skfm.pretrain")]
    assert not found, found


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(EDGES[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(EDGES):
        if node not in index:
            visit(node)
    return cycles


def test_no_import_cycles():
    assert not _cycles(), _cycles()


def _private_imports() -> set[tuple[str, str]]:
    """(importer, name) for each private name imported from outside the importer's own
    subpackage. A ``_name`` is private to the package that holds it: the package itself for
    a private module (``skfm._backend``: all of skfm), the defining module's package for a
    private function or constant (``skfm.relational.database._check_columns``:
    skfm.relational)."""
    found = set()
    for module, names in GRAPH.items():
        for _, name in names:
            parts = name.split(".")
            for i, part in enumerate(parts[1:], start=1):
                if not part.startswith("_") or part.startswith("__"):
                    continue
                holder = ".".join(parts[:i])
                owner = holder if holder in PACKAGES else holder.rpartition(".")[0]
                if not _inside(module, owner):
                    found.add((module, name))
    return found


def test_no_private_names_across_subpackages():
    """A private name is used only inside its own subpackage; the count only goes down."""
    found = _private_imports()
    assert found <= KNOWN_PRIVATE_IMPORTS, f"new: {sorted(found - KNOWN_PRIVATE_IMPORTS)}"
    assert found == KNOWN_PRIVATE_IMPORTS, (
        f"fixed, remove from KNOWN_PRIVATE_IMPORTS: {sorted(KNOWN_PRIVATE_IMPORTS - found)}")


#: Most lines a module may have: a longer one holds more than one job (split it by job).
MAX_MODULE_LINES = 450


def test_every_module_is_at_most_450_lines():
    long = {name: n for name, path in MODULES.items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert MODULES, "no modules found: the check would be empty"
    assert not long, f"modules above {MAX_MODULE_LINES} lines (split them by job): {long}"


@pytest.mark.parametrize("source, expected", [
    ("import skfm", {"skfm"}),
    ("def f():\n    from skfm.tabular import base", {"skfm.tabular.base"}),
    ("if TYPE_CHECKING:\n    import skfm\nelse:\n    import skfm.cli", {"skfm.cli"}),
    ("from skfm.relational.database import Database", {"skfm.relational.database"}),
])
def test_the_checks_see_every_import_that_runs(source, expected, monkeypatch, tmp_path):
    path = tmp_path / "probe.py"
    path.write_text(source)
    monkeypatch.setitem(MODULES, "skfm.probe", path)
    assert {_target(name) for _, name in _imports("skfm.probe")} == expected


#: Optional heavy dependencies that ``import skfm`` must not import: sktime (the forecaster,
#: the Mantis sktime adapter), sqlglot and DuckDB (the relational classes), matplotlib
#: (plots), and the pretraining code.
LAZY = ("torch", "sklearn", "pandas", "sktime", "sqlglot", "duckdb", "matplotlib",
        "skfm.pretrain", "skfm.relational", "skfm.tabular", "skfm.timeseries")


def test_import_skfm_stays_light():
    """``import skfm`` imports none of :data:`LAZY`; the classes that need them still import
    on first access."""
    code = (
        "import sys, skfm\n"
        f"print(sorted(m for m in {LAZY!r} if m in sys.modules))\n"
        "skfm.Database, skfm.RDBEncoder\n"
        "print(sorted(m for m in ('sqlglot', 'matplotlib', 'sktime') if m in sys.modules))\n"
        "from skfm import TabSwiftClassifier\n"
        "print(TabSwiftClassifier is skfm.TabSwiftClassifier, 'torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[0] == "[]"
    assert out[1] == "['sqlglot']"
    assert out[2] == "True True"


def test_the_package_face_names_where_each_class_lives():
    """Each public class loads from the module that defines it, and ``dir(skfm)`` lists it."""
    for name in skfm.__all__:
        value = getattr(skfm, name)
        if name != "__version__":
            assert value.__module__ == skfm._DEFINED_IN[name], name
    assert set(skfm.__all__) <= set(dir(skfm))
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        skfm.Nope  # noqa: B018


def test_tests_mirror_the_package_layout():
    """Every folder of tests/ is a subpackage of skfm: tests/tabular/model <-> skfm/tabular/model.

    Tests of one subpackage live in its folder; tests that cross the package (the estimator
    checks, reproducibility, hostile input, CUDA, these rules) stay at the top.
    """
    tests = Path(__file__).resolve().parent
    folders = [path for path in tests.rglob("*")
               if path.is_dir() and not path.name.startswith((".", "__"))]
    assert folders, "tests/ has no subfolders: the layout check would be empty"
    for folder in folders:
        assert (PACKAGE / folder.relative_to(tests)).is_dir(), f"{folder} mirrors no subpackage"
