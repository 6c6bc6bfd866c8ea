"""Every data file inside skfm/ ships in the wheel with a card naming a licence a BSD package
may redistribute: CC0, CC BY 4.0, public domain, BSD, MIT or Apache 2.0; never NC, ND or SA."""

import json
import re
import tomllib
from pathlib import Path

import pytest

import skfm

PACKAGE = Path(skfm.__file__).resolve().parent
PYPROJECT = PACKAGE.parent / "pyproject.toml"
CODE_SUFFIXES = {".py", ".pyc"}
CARD = "README.md"
FORBIDDEN = re.compile(r"\b(NC|ND|SA)\b|non-?commercial|no-?deriv|share-?alike", re.IGNORECASE)
ALLOWED = re.compile(r"\bCC0\b|\bCC[- ]BY[- ]4\.0\b|\bpublic domain\b|\bBSD-[23]-Clause\b"
                     r"|\bMIT\b|\bApache-2\.0\b", re.IGNORECASE)
LICENCE_LINE = re.compile(r"^#*\s*Licen[cs]e\s*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)


def allowed(licence: str) -> bool:
    """Whether `licence` is on the allow-list (and names no NC, ND or SA term)."""
    return not FORBIDDEN.search(licence) and bool(ALLOWED.search(licence))


def data_files(root: Path) -> list[Path]:
    """Every file under `root` that is not Python code or a compiled copy of it."""
    return sorted(path for path in root.rglob("*") if path.is_file()
                  and "__pycache__" not in path.parts and path.suffix not in CODE_SUFFIXES)


def card_licence(path: Path) -> str | None:
    """The licence a file's card names: its JSON card (``x.json`` beside ``x.safetensors``,
    or the JSON card itself) or the ``Licence:`` line of the README.md in its folder."""
    json_card = path.with_suffix(".json")
    if json_card.is_file() and (path.suffix == ".safetensors"
                                or path.with_suffix(".safetensors").is_file()):
        return json.loads(json_card.read_text(encoding="utf-8")).get("licence")
    readme = path.parent / CARD
    if readme.is_file():
        found = LICENCE_LINE.search(readme.read_text(encoding="utf-8"))
        return found.group(1) if found else None
    return None


def licence_problems(root: Path) -> list[str]:
    """``"<file>: <why>"`` for each data file under `root` without an allowed licence."""
    problems = []
    for path in data_files(root):
        licence = card_licence(path)
        if licence is None:
            problems.append(f"{path.relative_to(root)}: no card names its licence")
        elif not allowed(licence):
            problems.append(f"{path.relative_to(root)}: licence {licence!r} is not allowed")
    return problems


def test_every_data_file_has_a_card_with_an_allowed_licence():
    files = {path.relative_to(PACKAGE).as_posix() for path in data_files(PACKAGE)}
    assert "relational/data/nycflights13/flights.parquet" in files
    assert any(name.startswith("weights/") and name.endswith(".safetensors") for name in files)
    assert not [name for name in files if name.startswith("relational/data/f1/")]
    assert licence_problems(PACKAGE) == []


@pytest.mark.parametrize("licence", ["CC0 1.0", "CC-BY-4.0", "CC BY 4.0", "public domain",
                                     "BSD-3-Clause", "MIT", "Apache-2.0"])
def test_allowed_licences(licence):
    assert allowed(licence)


@pytest.mark.parametrize("licence", ["CC BY-NC-SA 3.0", "CC BY-NC 4.0", "CC-BY-ND-4.0",
                                     "CC BY-SA 4.0", "non-commercial use only", "GPL-3.0",
                                     "uncertain"])
def test_refused_licences(licence):
    assert not allowed(licence)


def test_a_card_naming_nc_or_none_fails(tmp_path):
    """The check reports a non-commercial card, a missing card and a weights card without one."""
    nc, bare, weights = (tmp_path / name for name in ("nc", "bare", "weights"))
    for folder in (nc, bare, weights):
        folder.mkdir()
    (nc / "races.parquet").write_bytes(b"PAR1")
    (nc / CARD).write_text("# F1\n\n## Licence: CC BY-NC-SA 3.0\n")
    (bare / "table.csv").write_text("a\n1\n")
    (weights / "m.safetensors").write_bytes(b"\0")
    (weights / "m.json").write_text(json.dumps({"sha256": "0" * 64}))
    assert licence_problems(tmp_path) == [
        "bare/table.csv: no card names its licence",
        "nc/README.md: licence 'CC BY-NC-SA 3.0' is not allowed",
        "nc/races.parquet: licence 'CC BY-NC-SA 3.0' is not allowed",
        "weights/m.json: no card names its licence",
        "weights/m.safetensors: no card names its licence",
    ]
    (weights / "m.json").write_text(json.dumps({"sha256": "0" * 64, "licence": "BSD-3-Clause"}))
    assert [problem.split(":")[0] for problem in licence_problems(tmp_path)] == [
        "bare/table.csv", "nc/README.md", "nc/races.parquet"]


def test_the_wheel_ships_every_data_file_and_nothing_stale():
    """Each package-data glob of pyproject.toml matches files; together they match them all."""
    package_data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-data"]
    shipped = set()
    for package, patterns in package_data.items():
        folder = PACKAGE.parent.joinpath(*package.split("."))
        for pattern in patterns:
            matched = set(folder.glob(pattern))
            assert matched, f"{package}: {pattern} matches no file"
            shipped |= matched
    assert set(data_files(PACKAGE)) <= shipped
    assert not [glob for globs in package_data.values() for glob in globs if "f1" in glob]
