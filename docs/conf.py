"""Sphinx configuration of the skfm documentation (``make docs``).

Environment variables:

``SKFM_DOCS_PLOT_GALLERY``
    ``0`` builds the example gallery without running the examples (no figures,
    no output); CI does this to stay fast. Anything else (the default) runs them.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

import skfm  # noqa: E402

# -- project -------------------------------------------------------------------------------------
project = "skfm"
author = "the skfm developers"
copyright = "the skfm developers"
version = release = skfm.__version__

# -- general -------------------------------------------------------------------------------------
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
    "skfm_docs",  # docs/_ext/skfm_docs.py: model cards, CLI help, pretraining configs
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.json", "auto_examples/*.md5",
                    "**/GALLERY_HEADER.rst"]
default_role = "literal"
toc_object_entries_show_parents = "hide"  # "fit()" in the page outline, not "Class.fit()"
nitpicky = False
# Benchmark reports are written by scripts and start at any heading level; their relative links
# to .csv files are resolved as downloads below.
suppress_warnings = ["myst.header", "myst.xref_missing"]
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

# -- autodoc / autosummary / numpydoc ------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"
autodoc_default_options = {"members": True, "inherited-members": True}
autodoc_member_order = "groupwise"
numpydoc_show_class_members = False  # the class template lists the methods
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False


def _skip_foreign_members(app, what, name, obj, skip, options):
    """Document skfm's own methods; inherited ones of scikit-learn, sktime and skbase
    (``get_params``, ``score``, ``set_output``...) are documented by those libraries, and their
    docstrings refer to labels of those libraries' sites."""
    module = getattr(obj, "__module__", None) or ""
    if module.split(".")[0] in {"sklearn", "sktime", "skbase"}:
        return True
    return skip


_SHAPE = re.compile(r"shape \(([^()]*)\)")
_TRAILING_UNDERSCORE = re.compile(r"(?<![`\w])([A-Za-z]\w*_)(?![`\w])")


def _quote_shapes(app, what, name, obj, options, lines):
    """``of shape (n_features_in_,)``: quote names that end in ``_`` so that reST does not read
    them as hyperlink references (scikit-learn writes them in backquotes)."""
    def quote(match):
        return "shape (" + _TRAILING_UNDERSCORE.sub(r"``\1``", match.group(1)) + ")"

    lines[:] = [_SHAPE.sub(quote, line) for line in lines]


# -- HTML ----------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"skfm {release}"
html_static_path = ["_static"]
html_css_files = ["skfm.css"]
html_show_sourcelink = False
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "header_links_before_dropdown": 6,
    "secondary_sidebar_items": ["page-toc", "sg_download_links", "sg_launcher_links"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
}
html_sidebars = {"index": [], "getting_started": [], "pretraining": [], "model_cards": []}

# -- sphinx-gallery ------------------------------------------------------------------------------
plot_gallery = os.environ.get("SKFM_DOCS_PLOT_GALLERY", "1").lower() not in {"0", "false", "no"}

sphinx_gallery_conf = {
    "examples_dirs": ["../examples"],
    "gallery_dirs": ["auto_examples"],
    "filename_pattern": r"/plot_",
    "plot_gallery": plot_gallery,
    "doc_module": ("skfm",),
    "backreferences_dir": "gen_modules/backreferences",
    "reference_url": {"skfm": None},
    "download_all_examples": False,
    "remove_config_comments": True,
    "min_reported_time": 1,
    "matplotlib_animations": False,
    "within_subsection_order": "skfm_docs.ExampleOrder",
    "show_memory": False,
    "thumbnail_size": (320, 224),
    # before each example: matplotlib's defaults, and no sktime 1.2 FutureWarning noise
    "reset_modules": ("matplotlib", "skfm_docs.quiet_sktime_warnings"),
}


def setup(app):
    app.connect("autodoc-skip-member", _skip_foreign_members)
    app.connect("autodoc-process-docstring", _quote_shapes, priority=100)
