"""Directives that build pages of the skfm docs from the package itself, at build time.

``.. skfm-model-cards::``
    One section per shipped checkpoint card (``skfm/weights/*.json``).
``.. skfm-cli-help:: [subcommand]``
    The ``--help`` text of ``skfm`` or one of its subcommands.
``.. skfm-pretrain-configs::``
    A table of the configs in ``skfm/_weights/configs/`` and their architecture settings.

So the pages never disagree with what ships: nothing is copied by hand.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.directives.other import TocTree
from sphinx.util.docutils import SphinxDirective
from sphinx.util.matching import patfilter
from sphinx.util.nodes import nested_parse_with_titles

import skfm

PACKAGE = Path(skfm.__file__).resolve().parent
WEIGHTS = PACKAGE / "weights"
CONFIGS = PACKAGE / "_weights" / "configs"


def _literal(value) -> str:
    """A JSON value as inline text for a table cell."""
    if isinstance(value, float):
        text = f"{value:.4g}"
    elif isinstance(value, list):
        text = ", ".join(_literal(v).strip("`") for v in value)
    else:
        text = str(value)
    text = text.replace("`", "'").replace("|", "/").replace("\n", " ").replace("\\", "/")
    return f"``{text}``" if text else ""


def _prose(value) -> str:
    """A JSON value as plain text for a table cell (free text, commands)."""
    if isinstance(value, (dict, list, float)):
        return _literal(value)
    text = str(value).replace("\n", " ").replace("|", "/").strip()
    # text from cards is shown as written: escape inline markup characters
    for char in "\\*`_":
        text = text.replace(char, "\\" + char)
    return text


def _flatten(d: dict, prefix: str = "") -> list[tuple[str, object]]:
    out = []
    for key, value in d.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.extend(_flatten(value, name + "."))
        else:
            out.append((name, value))
    return out


def _table(rows: list[tuple[str, object]], header=("setting", "value"), widths="30 70"):
    lines = [".. list-table::", "   :header-rows: 1", f"   :widths: {widths}",
             "   :class: skfm-card-table", "",
             f"   * - {header[0]}", f"     - {header[1]}"]
    for key, value in rows:
        cell = _literal(value) if not isinstance(value, str) or len(value) < 60 else _prose(value)
        lines += [f"   * - ``{key}``", f"     - {cell or '(empty)'}"]
    return lines + [""]


def _heading(text: str, char: str) -> list[str]:
    return [text, char * max(len(text), 3), ""]


def card_rst(path: Path) -> list[str]:
    """The reStructuredText of one checkpoint card."""
    card = json.loads(path.read_text())
    name = path.stem
    lines = [f".. _card-{name}:", ""] + _heading(name, "-")
    facts = [("model", card.get("model")), ("file", card.get("file")),
             ("size", f"{card['size_bytes'] / 1e6:.2f} MB" if "size_bytes" in card else None),
             ("storage dtype", card.get("storage_dtype")), ("sha256", card.get("sha256"))]
    for key, value in facts:
        if value is not None:
            lines.append(f":{key}: ``{value}``")
    lines.append("")
    for key in ("note", "release_gate"):
        if key in card:
            title = key.replace("_", " ").capitalize()
            lines += [f".. admonition:: {title}", "   :class: warning", "",
                      f"   {_prose(card[key])}", ""]
    if "command" in card:
        lines += ["Made by:", "", ".. code-block:: text", "   :class: skfm-wrap", "",
                  f"   {card['command']}", ""]
    titles = {"config": "Architecture", "prior": "Synthetic prior", "training": "Training",
              "held_out_prior": "Held-out prior data (after training)",
              "evaluation": "Evaluation"}
    shown = {"model", "file", "size_bytes", "storage_dtype", "sha256", "note", "release_gate",
             "command"}
    sections = [k for k in titles if k in card] + [
        k for k, v in card.items() if k not in titles and k not in shown and isinstance(v, dict)]
    rest = [(k, v) for k, v in card.items()
            if k not in shown and k not in sections]
    for key in sections:
        lines += _heading(titles.get(key, key.replace("_", " ").capitalize()), "~")
        lines += _table(_flatten(card[key]))
    if rest:
        lines += _heading("Other fields", "~") + _table(rest)
    return lines


class ModelCards(SphinxDirective):
    """One section per ``skfm/weights/*.json``."""

    has_content = False

    def run(self):
        lines: list[str] = []
        for path in sorted(WEIGHTS.glob("*.json")):
            self.env.note_dependency(str(path))
            lines += card_rst(path)
        node = nodes.section()
        node.document = self.state.document
        nested_parse_with_titles(self.state, StringList(lines, source=str(WEIGHTS)), node)
        return node.children


class CliHelp(SphinxDirective):
    """``skfm [subcommand] --help`` as a literal block."""

    optional_arguments = 1
    has_content = False

    def run(self):
        from skfm.cli import build_parser

        parser = build_parser()
        if self.arguments:
            sub = next(a for a in parser._actions if a.dest == "command")
            parser = sub.choices[self.arguments[0]]
        text = parser.format_help()
        block = nodes.literal_block(text, text)
        block["language"] = "text"
        return [block]


class PretrainConfigs(SphinxDirective):
    """A table of ``skfm/_weights/configs/*.json``: one row per config."""

    has_content = False
    option_spec = {"model": directives.unchanged}

    def run(self):
        lines = [".. list-table::", "   :header-rows: 1", "   :widths: 20 50 30", "",
                 "   * - config", "     - architecture", "     - training"]
        for path in sorted(CONFIGS.glob("*.json")):
            self.env.note_dependency(str(path))
            config = json.loads(path.read_text())
            arch = config.get("model", config.get("config", {}))
            if not isinstance(arch, dict):
                arch = {}
            text = ", ".join(f"{k}={v}" for k, v in arch.items() if not isinstance(v, (dict, list)))
            optim = config.get("optim", {})
            shown = ("lr", "batch_size", "warmup", "min_lr_ratio", "forecast_weight")
            recipe = ", ".join(f"{k}={optim[k]}" for k in shown if k in optim)
            lines += [f"   * - ``{path.stem}``", f"     - {_literal(text) if text else ''}",
                      f"     - {_literal(recipe) if recipe else ''}"]
        node = nodes.section()
        node.document = self.state.document
        nested_parse_with_titles(self.state, StringList(lines + [""], source=str(CONFIGS)), node)
        return node.children


def quiet_sktime_warnings(gallery_conf, fname, when=None):
    """sphinx-gallery ``reset_modules`` hook, before each example: hide sktime 1.2's notice,
    raised on every forecaster's construction, that a config default will change in 1.3."""
    warnings.filterwarnings("ignore", message=r".*``remember_data``", category=FutureWarning)


#: Gallery order: by estimator, as in the user guide; examples not listed come last, by name.
EXAMPLE_ORDER = [
    "plot_tabswift_classifier", "plot_tabswift_early_exit", "plot_tabswift_shap",
    "plot_tabswift_regressor",
    "plot_spn", "plot_tabmgp", "plot_rdb_encoder", "plot_mantis", "plot_timepeft",
]


class ExampleOrder:
    """sphinx-gallery ``within_subsection_order``: the order of :data:`EXAMPLE_ORDER`."""

    def __init__(self, src_dir):
        self.src_dir = src_dir

    def __call__(self, filename):
        stem = Path(filename).stem
        rank = EXAMPLE_ORDER.index(stem) if stem in EXAMPLE_ORDER else len(EXAMPLE_ORDER)
        return rank, stem

    def __repr__(self):
        return "<ExampleOrder>"


#: Generated pages that a catch-all glob must not list (sphinx-gallery's timing table).
GLOB_SKIP = {"sg_execution_times"}


class OptionalGlobTocTree(TocTree):
    """A ``toctree`` whose glob patterns may match nothing (then they are dropped, silently).

    Pages that other people add (``docs/*.md``, new benchmark reports) are picked up by a
    trailing catch-all pattern, and the build does not fail while there are none. Patterns are
    expanded here (each document once, in the order of the patterns; :data:`GLOB_SKIP` left out)
    and handed to the plain ``toctree`` as explicit entries. The document is still noted as
    holding a glob, so that an incremental build re-reads it when pages are added or removed.
    """

    def run(self):
        if "glob" in self.options:
            del self.options["glob"]
            self.env.glob_toctrees.add(self.env.docname)
            found = set(self.env.found_docs) - {self.env.docname} - GLOB_SKIP
            taken: set[str] = set()
            lines = []
            for line in self.content:
                entry = line.strip()
                if entry and any(c in entry for c in "*?["):
                    matches = sorted(set(patfilter(found, entry)) - taken)
                    taken |= set(matches)
                    lines += [f"/{name}" for name in matches]
                elif entry:
                    taken.add(entry)
                    lines.append(entry)
            source = self.content.source(0) if len(self.content) else ""
            self.content = StringList(lines, source=source)
        return super().run() if len(self.content) else []


def resolve_skfm_alias(app, env, node, contnode):
    """``skfm.tabular.strategic.SPNClassifier`` -> the documented ``skfm.SPNClassifier``.

    The API reference documents each object once, under its public name; docstrings and
    examples may name it by the module that defines or re-exports it.
    """
    target = node.get("reftarget", "")
    if node.get("refdomain") != "py" or not target.startswith("skfm."):
        return None
    domain = env.get_domain("py")
    parts = target.split(".")
    for tail in range(1, min(len(parts), 3)):  # Name, or Class.method
        suffix = "." + ".".join(parts[-tail:])
        kinds = set(domain.objtypes_for_role(node["reftype"]) or ())
        names = [name for name, entry in domain.objects.items()
                 if name.endswith(suffix) and (not kinds or entry.objtype in kinds)]
        if len(names) == 1:
            return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"],
                                       names[0], node, contnode)
    return None


def setup(app):
    app.connect("missing-reference", resolve_skfm_alias)
    app.add_directive("skfm-toctree", OptionalGlobTocTree)
    app.add_directive("skfm-model-cards", ModelCards)
    app.add_directive("skfm-cli-help", CliHelp)
    app.add_directive("skfm-pretrain-configs", PretrainConfigs)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
