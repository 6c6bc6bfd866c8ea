"""``skfm bench``: list the benchmark scripts of a source checkout, or run one.

The scripts live in the ``benchmarks/`` folder of the repository, next to the
``skfm`` package, and are not installed with it. They are found in the current
directory or in the checkout the imported ``skfm`` comes from (an editable
install), recognised by their shared helper module ``_common.py``. The
maintained comparisons are in ``benchmarks/``; the one-off studies, whose
conclusions are in their reports, in ``benchmarks/studies/`` (named
``studies/<script>``).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

MARKER = "_common.py"
STUDIES = "studies"  # the sub-folder of one-off studies
WORKER = "(worker script)"  # how a script that other benchmarks run ends its summary sentence
DEFAULT_OUT = Path("runs", "benchmarks")
"""Where a script writes its report without ``--out``: relative to the current directory
(``benchmarks/_common.py`` holds the same default)."""
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(])")


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


def summary(docstring: str) -> str:
    """The first sentence of a docstring's first paragraph, on one line.

    Examples
    --------
    >>> from skfm._bench import summary
    >>> summary("Which rule should choose\\nthe share: one or two.\\n\\nDetails. More.")
    'Which rule should choose the share: one or two.'
    >>> summary("Speed, e.g. rows/s. Then more.")
    'Speed, e.g. rows/s.'
    """
    paragraph = " ".join(docstring.strip().split("\n\n")[0].split())
    return _SENTENCE_END.split(paragraph, maxsplit=1)[0]


def list_benchmarks(folder: Path) -> dict[str, str]:
    """``{name: summary sentence of its docstring}`` of every script in ``folder``.

    The maintained scripts of ``folder`` come first, then the studies of
    ``folder/studies``, named ``studies/<script>``. Helper modules (names
    starting with ``_``) and worker scripts (summary ending in ``WORKER``),
    which other benchmarks start, are left out; the docstrings are read
    without running the scripts.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from skfm._bench import list_benchmarks
    >>> scripts = {"_common.py": '"Shared helpers."',
    ...            "cc18.py": "'''Benchmark TabSwiftClassifier\\non OpenML-CC18. Protocol.'''",
    ...            "cc18_split.py": '"One split of cc18 (worker script)."',
    ...            "studies/rules.py": '"Which rule to ship."'}
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     Path(tmp, "studies").mkdir()
    ...     for name, text in scripts.items():
    ...         _ = Path(tmp, name).write_text(text)
    ...     list_benchmarks(Path(tmp))
    {'cc18': 'Benchmark TabSwiftClassifier on OpenML-CC18.', 'studies/rules': 'Which rule to ship.'}
    """
    scripts = {}
    for prefix, where in (("", folder), (f"{STUDIES}/", folder / STUDIES)):
        for path in sorted(where.glob("*.py")):
            if path.name.startswith("_"):
                continue
            doc = summary(ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or "")
            if not doc.rstrip(".").endswith(WORKER):
                scripts[prefix + path.stem] = doc
    return scripts


def report_folder(args: list[str]) -> Path:
    """Where a script run with ``args`` writes its report: its ``--out``, else
    :data:`DEFAULT_OUT` under the current directory.

    Examples
    --------
    >>> from pathlib import Path
    >>> from skfm._bench import report_folder
    >>> report_folder(["--splits", "1", "--out=/tmp/x"]) == Path("/tmp/x")
    True
    >>> report_folder([]) == Path.cwd() / "runs" / "benchmarks"
    True
    """
    out = DEFAULT_OUT
    for i, arg in enumerate(args):
        if arg == "--out" and i + 1 < len(args):
            out = Path(args[i + 1])
        elif arg.startswith("--out="):
            out = Path(arg.removeprefix("--out="))
    return Path.cwd() / out


def run_benchmark(name: str, args: list[str], folder: Path) -> int:
    """Run ``folder/<name>.py`` with ``args`` in this interpreter; its exit status.

    The script runs in the current directory and writes its report where its
    ``--out`` says, by default ``runs/benchmarks`` there (not in the checkout
    the scripts come from), so that a trial run leaves the shipped reports
    alone; ``--out docs/benchmarks`` in the checkout regenerates one. The
    folder is printed before the script starts.

    Raises
    ------
    ValueError
        ``name`` is not one of :func:`list_benchmarks`.
    """
    known = list_benchmarks(folder)
    name = name.removesuffix(".py")
    if name not in known:
        raise ValueError(
            f"unknown benchmark {name!r}; the scripts in {folder} are: {', '.join(known)}"
        )
    print(f"skfm bench: {name} writes its report to {report_folder(args)}", flush=True)
    return subprocess.run([sys.executable, str(folder / f"{name}.py"), *args],
                          check=False).returncode


def format_listing(scripts: dict[str, str], folder: Path) -> str:
    """The table ``skfm bench`` prints: the maintained scripts, then the studies; one a line,
    name and what it measures."""
    width = max(map(len, scripts), default=0)
    studies = {n: d for n, d in scripts.items() if n.startswith(f"{STUDIES}/")}
    lines = [f"benchmark scripts in {folder} (run: skfm bench NAME [ARGS], options: "
             f"skfm bench NAME --help; reports go to ./{DEFAULT_OUT.as_posix()} unless --out "
             "says otherwise):", "", "maintained comparisons:"]
    lines += [f"  {n:<{width}}  {d}" for n, d in scripts.items() if n not in studies]
    lines += ["", "studies (one-off; their conclusions are in their reports):"]
    lines += [f"  {n:<{width}}  {d}" for n, d in studies.items()]
    return "\n".join(lines)
