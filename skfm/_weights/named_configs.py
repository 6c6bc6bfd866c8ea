"""The named configs of every model family: ``skfm/_weights/configs/<model>-<name>.json``.

A config holds a model's architecture (``"model"``) and, for ``skfm pretrain``, the
prior (``"prior"``) and training recipe (``"optim"``). Inference reads them for
``checkpoint="random:<name>"`` (the architecture at a fixed random initialisation),
pretraining for ``skfm pretrain <model> --config <name>``; both find them here, so
that inference never imports :mod:`skfm.pretrain`.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path


def shipped_configs(model: str) -> dict[str, dict]:
    """The configs shipped for ``model`` (``configs/<model>-<name>.json``), by name.

    Examples
    --------
    >>> sorted(shipped_configs("tabswift"))
    ['finetune', 'grown', 'small', 'tiny', 'v3', 'v4']
    >>> shipped_configs("tabswift")["small"]["model"]["n_layers"]
    6
    """
    folder = resources.files("skfm._weights") / "configs"
    prefix = f"{model}-"
    configs = {}
    for path in sorted(folder.iterdir(), key=lambda p: p.name):
        name = path.name.removeprefix(prefix).removesuffix(".json")
        # "timeseries-backbone-small" is not a "timeseries" config: names have no "-"
        if path.name.startswith(prefix) and path.name.endswith(".json") and "-" not in name:
            configs[name] = json.loads(path.read_text())
    return configs


def load_named_config(model: str, config: str | Path) -> dict:
    """A training config by shipped name (``configs/<model>-<name>.json``) or json path.

    Examples
    --------
    >>> sorted(load_named_config("tabswift", "tiny"))
    ['model', 'optim', 'prior']
    """
    path = Path(config)
    if path.exists():
        return json.loads(path.read_text())
    configs = shipped_configs(model)
    if str(config) not in configs:
        raise ValueError(
            f"unknown pretraining config {config!r} for {model}: give a json path or one of "
            f"{sorted(configs)}"
        )
    return configs[str(config)]
