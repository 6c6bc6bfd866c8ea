"""The ``skfm`` command: ``bench``, the configs in ``pretrain --help``, the demo's figures."""

import ast
import importlib.util
import subprocess
import sys

import pandas as pd
import pytest

from skfm import _bench
from skfm._commands import _beside, _plot_rdb, _plot_strategic
from skfm._weights import shipped_configs
from skfm.cli import main


def test_bench_lists_every_script_with_its_first_docstring_line(capsys):
    main(["bench"])
    out = capsys.readouterr().out
    assert ("cc18    " in out
            and "Benchmark TabSwiftClassifier against common baselines on OpenML-CC18" in out)
    assert "tabmgp_timing" in out and "_common" not in out
    assert "rdb_featuretools" not in out  # a worker script, run by rdb_accuracy/rdb_speed


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
    runs/benchmarks, which git ignores, so a trial run never overwrites a shipped report."""
    C = _common_module()
    assert C.DEFAULT_OUT == C.ROOT / "runs" / "benchmarks"
    assert "runs/" in (C.ROOT / ".gitignore").read_text().splitlines()
    folder = _bench.find_benchmarks()
    for name in [*_bench.list_benchmarks(folder), "rdb_featuretools"]:
        source = (folder / f"{name}.py").read_text(encoding="utf-8")
        tree = ast.parse(source)
        imports = [a.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                   for a in node.names]
        defined = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
        assert "_common" in imports and "sys.path.insert" not in source, name
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
    C = _common_module()
    for report in sorted(C.SHIPPED.glob("*.md")):
        header = report.read_text(encoding="utf-8").split("\n\n")[1]
        assert len(header) < 1000 and "--note " not in header, report.name
        for line in header.splitlines():
            if line.startswith("Notes: "):
                link = line.split("](")[1].split(")")[0]
                assert (report.parent / link).is_file(), (report.name, link)


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
