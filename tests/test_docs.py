"""What README.md and the documentation tell a user to import exists."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import skfm

ROOT = Path(__file__).resolve().parents[1]
GENERATED = {"_build", "auto_examples", "generated", "gen_modules"}  # written by the docs build
PAGES = [ROOT / "README.md", *sorted(
    path for pattern in ("*.rst", "*.md") for path in (ROOT / "docs").rglob(pattern)
    if not GENERATED & set(path.relative_to(ROOT).parts))]
FROM_IMPORT = re.compile(r"from\s+(skfm(?:\.\w+)*)\s+import\s+(\([^)]*\)|[\w ,]+)")


def code_blocks(path: Path) -> list[str]:
    """The code blocks of a Markdown (fenced) or reStructuredText (a ``::`` paragraph or
    directive, then its indented lines) page."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if path.suffix == ".md":
        return re.findall(r"^```[^\n]*\n(.*?)^```", "\n".join(lines), flags=re.M | re.S)
    blocks, k = [], 0
    while k < len(lines):
        if lines[k].rstrip().endswith("::") or re.match(r"\s*\.\. [\w-]+::", lines[k]):
            indent = len(lines[k]) - len(lines[k].lstrip())
            body, k = [], k + 1
            while k < len(lines) and (not lines[k].strip()
                                      or len(lines[k]) - len(lines[k].lstrip()) > indent):
                body.append(lines[k])
                k += 1
            blocks.append("\n".join(body))
        else:
            k += 1
    return blocks


def documented_imports() -> list[tuple[str, str, str]]:
    """(page, module, name) for every ``from skfm... import name`` in a code block."""
    found = []
    for path in PAGES:
        for block in code_blocks(path):
            for module, names in FROM_IMPORT.findall(block.replace("\\\n", " ")):
                for name in names.strip("()").replace("\n", " ").split(","):
                    if name.split():
                        found.append((str(path.relative_to(ROOT)), module, name.split()[0]))
    return found


def test_the_code_block_parser_finds_the_imports_of_both_formats(tmp_path):
    (tmp_path / "page.md").write_text("text ``from skfm import Prose``\n```python\n"
                                      "from skfm import (A,\n    B)\n```\n")
    (tmp_path / "page.rst").write_text("Intro::\n\n   from skfm.batch import c\n\nout\n"
                                       ".. code-block:: bash\n\n   python -c \"from skfm import D\"\n")
    assert code_blocks(tmp_path / "page.md") == ["from skfm import (A,\n    B)\n"]
    assert code_blocks(tmp_path / "page.rst") == ["\n   from skfm.batch import c\n",
                                                  "\n   python -c \"from skfm import D\""]


def test_the_pages_import_from_skfm():
    """The scan is not empty: the README and the user guides import skfm's classes."""
    pages = {page for page, _, _ in documented_imports()}
    assert {"README.md", "docs/getting_started.rst", "docs/scaling.md"} <= pages


@pytest.mark.parametrize(("page", "module", "name"), documented_imports(),
                         ids=[f"{p}:{m}.{n}" for p, m, n in documented_imports()])
def test_every_documented_import_works(page, module, name):
    """As ``from module import name`` does: an attribute, or else a submodule."""
    if not hasattr(importlib.import_module(module), name):
        importlib.import_module(f"{module}.{name}")  # else ModuleNotFoundError; the id names the page


def test_the_readme_table_names_are_importable_from_skfm():
    """Each name in the first column of the README's estimator table, ``best_response``
    included: ``from skfm import best_response`` works."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_cells = re.findall(r"^\| ([^|]*`[^|]*) \|", readme, flags=re.M)
    names = [name for cell in first_cells for name in re.findall(r"`(\w+)`", cell)]
    assert {"SPNClassifier", "best_response", "TabSwiftClassifier"} <= set(names)
    for name in names:
        assert name in skfm.__all__ and getattr(skfm, name) is not None, name
    from skfm import best_response
    from skfm.tabular.strategic import best_response as defined

    assert best_response is defined
