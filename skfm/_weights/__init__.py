"""Checkpoints of skfm models: safetensors weights plus a JSON card, never pickle.

One loader (:mod:`skfm._weights.loader`) turns a checkpoint, or ``random:<config>``, into
the module of any model family.
"""

from .loader import (
    RANDOM_PREFIX,
    ModelFamily,
    Weights,
    clear_cache,
    fresh_model,
    load_weights,
    shared_model,
)
from .named_configs import load_named_config, shipped_configs
from .registry import (
    Checkpoint,
    list_checkpoints,
    load_checkpoint,
    save_checkpoint,
    sha256_file,
    skfm_home,
)

__all__ = [
    "RANDOM_PREFIX",
    "Checkpoint",
    "ModelFamily",
    "Weights",
    "clear_cache",
    "fresh_model",
    "list_checkpoints",
    "load_checkpoint",
    "load_named_config",
    "load_weights",
    "save_checkpoint",
    "sha256_file",
    "shared_model",
    "shipped_configs",
    "skfm_home",
]
