"""The ``skfm`` command: ``bench``, the configs in ``pretrain --help``, the demo's figures."""

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from skfm import _bench
from skfm._commands import _beside, _plot_rdb, _plot_strategic
from skfm._weights import shipped_configs
from skfm.cli import main


def test_bench_lists_every_script_with_its_first_docstring_line(capsys):
    main(["bench"])
    out = capsys.readouterr().out
    assert ("cc18  " in out
            and "Benchmark TabSwiftClassifier against common baselines on OpenML-CC18 datasets." in out)
    assert "tabmgp_timing" in out and "_common" not in out
    assert "rdb_featuretools" not in out  # a worker script, run by rdb_accuracy/rdb_speed
    maintained, studies = out.split("studies (one-off")
    assert "  cc18 " in maintained and "  studies/tabswift_shap " in studies
    assert "studies/" not in maintained.split("maintained comparisons:")[1]


def test_bench_descriptions_are_whole_sentences():
    """A summary that wraps over docstring lines is listed whole (the guard-rules study's
    stopped at "...in its guard: the"), and every description ends its sentence."""
    scripts = _bench.list_benchmarks(_bench.find_benchmarks())
    assert scripts["studies/tabswift_guard_rules"].endswith(
        "or skfm's shared margin of a clear cross-validated gain.")
    assert all(doc.endswith((".", "?", "!")) for doc in scripts.values()), scripts


def test_bench_reports_go_under_the_current_directory(monkeypatch, tmp_path, capsys):
    """Run from another folder, a script writes under that folder, not into the checkout the
    scripts come from, and the command says where first."""
    calls = []

    def fake_run(command, check):
        calls.append(command)
        return subprocess.CompletedProcess(command, returncode=0)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(_bench.subprocess, "run", fake_run)
    main(["bench", "studies/timepeft_bounds"])
    assert f"writes its report to {tmp_path / 'runs' / 'benchmarks'}" in capsys.readouterr().out
    main(["bench", "dask_scaling", "--rows", "9", "--out", "elsewhere"])
    assert f"writes its report to {tmp_path / 'elsewhere'}" in capsys.readouterr().out
    folder = _bench.find_benchmarks()
    assert [c[1] for c in calls] == [str(folder / "studies" / "timepeft_bounds.py"),
                                     str(folder / "dask_scaling.py")]
    # the scripts' own default is the same folder, relative to where they run
    assert _common_module().DEFAULT_OUT == _bench.DEFAULT_OUT == Path("runs", "benchmarks")


def test_bench_unknown_name_lists_the_known_ones():
    with pytest.raises(SystemExit, match=r"unknown benchmark 'nope'.*cc18, dask_scaling"):
        main(["bench", "nope"])


def test_bench_runs_the_script_with_the_remaining_arguments(monkeypatch):
    calls = []

    def fake_run(command, check):
        calls.append(command)
        return subprocess.CompletedProcess(command, returncode=3)

    monkeypatch.setattr(_bench.subprocess, "run", fake_run)
    with pytest.raises(SystemExit) as exit_info:
        main(["bench", "regression", "--splits", "1", "--out", "here", "--help"])
    assert exit_info.value.code == 3  # the script's status
    folder = _bench.find_benchmarks()
    assert calls == [[sys.executable, str(folder / "regression.py"),
                      "--splits", "1", "--out", "here", "--help"]]


def test_bench_without_a_checkout_says_where_it_looked(monkeypatch, tmp_path):
    (tmp_path / "benchmarks").mkdir()  # a benchmarks/ folder that is not skfm's
    monkeypatch.setattr(_bench, "benchmark_folders", lambda: [tmp_path / "benchmarks"])
    with pytest.raises(SystemExit, match="no skfm benchmarks/ folder.*source checkout"):
        main(["bench"])


@pytest.mark.slow
def test_bench_runs_a_real_benchmark(tmp_path):
    main(["bench", "tabswift_speed", "--context-rows", "50", "--features", "5", "--test-rows",
          "200", "--repeats", "2", "--batch-rows", "50", "--threads", "1", "--out", str(tmp_path)])
    assert (tmp_path / "tabswift_speed.md").read_text().count("|") > 10


def _common_module():
    """benchmarks/_common.py, imported from its file (the scripts import it as ``_common``)."""
    name = "skfm_benchmarks_common"
    if name not in sys.modules:
        path = _bench.find_benchmarks() / "_common.py"
        spec = importlib.util.spec_from_file_location(name, path)
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


def test_benchmark_scripts_share_one_helper_and_write_to_an_ignored_folder():
    """Every script imports ``_common`` one way and takes ``--out`` from it: by default
    runs/benchmarks, which git ignores in the checkout, so a trial run never overwrites a
    shipped report. The studies reach it by putting benchmarks/ first on the path, one way."""
    C = _common_module()
    assert "runs/" in (C.ROOT / ".gitignore").read_text().splitlines()
    folder = _bench.find_benchmarks()
    path_line = "sys.path.insert(0, str(Path(__file__).resolve().parents[1]))"
    for name in [*_bench.list_benchmarks(folder), "rdb_featuretools"]:
        source = (folder / f"{name}.py").read_text(encoding="utf-8")
        tree = ast.parse(source)
        imports = [a.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                   for a in node.names]
        defined = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
        assert "_common" in imports, name
        study = name.startswith(f"{_bench.STUDIES}/")
        assert source.count("sys.path.insert") == (1 if study else 0), name
        assert (path_line in source) == study, name
        assert not defined & {"make_data", "cpu_seconds", "run_header"}, name
        assert ("C.add_out_argument(" in source) != (name == "rdb_featuretools"), name


def test_benchmark_notes_come_from_a_file_that_the_header_links(tmp_path):
    C = _common_module()
    notes = tmp_path / "notes" / "report.md"
    notes.parent.mkdir()
    notes.write_text("---\norphan: true\n---\n\nHow the runs were merged.\n\n**Findings.** Two.\n")
    assert C.read_notes(notes) == ["How the runs were merged.", "**Findings.** Two."]
    assert C.read_notes(None) == []
    md = C.write_report(tmp_path / "out", "report", "A report", ["Setup.", *C.read_notes(notes)],
                        pd.DataFrame({"x": [1.0]}), notes)
    text = md.read_text()
    assert "Notes: [../notes/report.md](../notes/report.md)" in text
    assert text.index("Setup.") < text.index("How the runs were merged.") < text.index("Two.")
    assert md.with_suffix(".csv").read_text().startswith("# Command: `python ")


def test_shipped_report_headers_are_short_and_link_their_notes():
    """The run header follows the title, or the one line that says the report is stale."""
    C = _common_module()
    for report in sorted(C.SHIPPED.glob("*.md")):
        if report.name == "README.md":
            continue
        paragraphs = report.read_text(encoding="utf-8").split("\n\n")
        stale = paragraphs[1].startswith("**Stale:** ")
        header = paragraphs[2 if stale else 1]
        assert header.startswith("Command: `python benchmarks/"), report.name
        assert not stale or "\n" not in paragraphs[1], report.name
        assert len(header) < 1000 and "--note " not in header, report.name
        for line in header.splitlines():
            if line.startswith("Notes: "):
                link = line.split("](")[1].split(")")[0]
                assert (report.parent / link).is_file(), (report.name, link)


def test_benchmarks_page_lists_every_report_once_maintained_before_studies():
    """docs/benchmarks.md names each shipped report in one toctree: a new report must be put
    among the maintained reports or the studies (Sphinx -W fails on a page in none)."""
    C = _common_module()
    page = (C.ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    listed = [line.removeprefix("benchmarks/") for line in page.splitlines()
              if line.startswith("benchmarks/")]
    reports = sorted(r.stem for r in C.SHIPPED.glob("*.md"))
    assert sorted(listed) == reports
    maintained = page.index("## Maintained reports")
    studies = page.index("## Studies")
    assert maintained < page.index("\nbenchmarks/tabswift_cc18\n") < studies
    assert studies < page.index("\nbenchmarks/timepeft_bounds\n")


def test_pretrain_help_lists_the_shipped_configs(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["pretrain", "mantis", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for model in ("tabswift", "mantis", "timeseries-backbone"):
        assert {"small", "tiny"} <= set(shipped_configs(model))
        for name, config in shipped_configs(model).items():
            line = next(line for line in out.splitlines() if f"{model} {name} " in line)
            assert f"d_model={config['model']['d_model']}," in line


def test_the_forecast_config_continues_the_small_backbone():
    """``forecast`` (used with ``--init``) keeps small's architecture and prior, adds the head's loss."""
    configs = shipped_configs("timeseries-backbone")
    assert configs["forecast"]["model"] == configs["small"]["model"]
    assert configs["forecast"]["prior"] == configs["small"]["prior"]
    assert configs["forecast"]["optim"]["forecast_weight"] > 0
    assert configs["small"]["optim"].get("forecast_weight", 0) == 0


def test_demo_figures_are_written_beside_the_main_one(tmp_path):
    plot = str(tmp_path / "figs" / "demo.png")
    assert _beside(plot, "spn") == str(tmp_path / "figs" / "demo_spn.png")
    (tmp_path / "figs").mkdir()
    spn = _plot_strategic([{"budget": 0.5, "tabswift_clean": 0.9, "tabswift_gamed": 0.7,
                            "spn_gamed": 0.85}], _beside(plot, "spn"))
    rdb = _plot_rdb([{"model": "RDBEncoder + TabSwift", "features": 10, "roc_auc": 0.8}],
                    _beside(plot, "rdb"))
    assert _plot_rdb([], None) is None  # no path: no figure
    assert (spn, rdb) == (_beside(plot, "spn"), _beside(plot, "rdb"))
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == ["demo_rdb.png",
                                                                     "demo_spn.png"]


def test_a_figure_without_matplotlib_says_how_to_install_it(monkeypatch, tmp_path):
    """matplotlib is the ``plot`` extra: the command line imports without it, and asking for a
    figure raises an ImportError that names the extra."""
    code = "import sys; sys.modules['matplotlib'] = None; import skfm.cli, skfm._commands"
    subprocess.run([sys.executable, "-c", code], check=True)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    path = tmp_path / "rdb.png"
    with pytest.raises(ImportError, match=r"pip install 'skfm\[plot\]'"):
        _plot_rdb([{"model": "RDBEncoder + TabSwift", "features": 10, "roc_auc": 0.8}], str(path))
    assert not path.exists()
