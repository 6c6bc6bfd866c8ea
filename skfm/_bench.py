"""``skfm bench``: list the benchmark scripts of a source checkout, or run one.

The scripts live in the ``benchmarks/`` folder of the repository, next to the
``skfm`` package, and are not installed with it. They are found in the current
directory or in the checkout the imported ``skfm`` comes from (an editable
install), recognised by their shared helper module ``_common.py``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

MARKER = "_common.py"
WORKER = "(worker script)"  # how a script that other benchmarks run ends its first docstring line


def benchmark_folders() -> list[Path]:
    """Where ``skfm bench`` looks, in order: ``./benchmarks``, then the package's checkout."""
    return [Path.cwd() / "benchmarks", Path(__file__).resolve().parents[1] / "benchmarks"]


def find_benchmarks(folders: list[Path] | None = None) -> Path:
    """The first of ``folders`` (default: :func:`benchmark_folders`) holding skfm's benchmarks.

    Raises
    ------
    FileNotFoundError
        None of them is a ``benchmarks/`` folder of an skfm checkout.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from skfm._bench import MARKER, find_benchmarks
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     checkout = Path(tmp, "benchmarks")
    ...     checkout.mkdir()
    ...     _ = (checkout / MARKER).write_text("")
    ...     find_benchmarks([Path(tmp, "elsewhere"), checkout]).name
    'benchmarks'
    """
    folders = benchmark_folders() if folders is None else folders
    for folder in folders:
        if (folder / MARKER).is_file():
            return folder
    looked = ", ".join(str(f) for f in folders)
    raise FileNotFoundError(
        f"no skfm benchmarks/ folder (with {MARKER}) in {looked}: the benchmark scripts come "
        "with the source checkout, not with the installed package; run `skfm bench` from the "
        "checkout's root"
    )


def list_benchmarks(folder: Path) -> dict[str, str]:
    """``{name: first line of its docstring}`` of every script in ``folder``.

    Helper modules (names starting with ``_``) and worker scripts (first
    docstring line ending in ``WORKER``), which other benchmarks start, are
    left out; the docstrings are read without running the scripts.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from skfm._bench import list_benchmarks
    >>> scripts = {"_common.py": '"Shared helpers."',
    ...            "cc18.py": '"Benchmark TabSwiftClassifier on OpenML-CC18."',
    ...            "cc18_split.py": '"One split of cc18 (worker script)."'}
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     for name, text in scripts.items():
    ...         _ = Path(tmp, name).write_text(text)
    ...     list_benchmarks(Path(tmp))
    {'cc18': 'Benchmark TabSwiftClassifier on OpenML-CC18.'}
    """
    scripts = {}
    for path in sorted(folder.glob("*.py")):
        if path.name.startswith("_"):
            continue
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        first = doc.strip().splitlines()[0] if doc.strip() else ""
        if not first.rstrip(".").endswith(WORKER):
            scripts[path.stem] = first
    return scripts


def run_benchmark(name: str, args: list[str], folder: Path) -> int:
    """Run ``folder/<name>.py`` with ``args`` in this interpreter; its exit status.

    The script writes its report where its ``--out`` says: by default the
    checkout's ``runs/benchmarks`` (ignored by git), so that a trial run leaves
    the shipped reports alone; ``--out docs/benchmarks`` regenerates one.

    Raises
    ------
    ValueError
        ``name`` is not one of :func:`list_benchmarks`.
    """
    known = list_benchmarks(folder)
    if name.removesuffix(".py") not in known:
        raise ValueError(
            f"unknown benchmark {name!r}; the scripts in {folder} are: {', '.join(known)}"
        )
    script = folder / f"{name.removesuffix('.py')}.py"
    return subprocess.run([sys.executable, str(script), *args], check=False).returncode


def format_listing(scripts: dict[str, str], folder: Path) -> str:
    """The table ``skfm bench`` prints: one script a line, name and what it measures."""
    width = max(map(len, scripts), default=0)
    lines = [f"benchmark scripts in {folder} (run: skfm bench NAME [ARGS], options: "
             "skfm bench NAME --help):", ""]
    lines += [f"  {name:<{width}}  {doc}" for name, doc in scripts.items()]
    return "\n".join(lines)
