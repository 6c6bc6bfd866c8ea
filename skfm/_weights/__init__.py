"""Checkpoints of skfm models: safetensors weights plus a JSON card, never pickle."""

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
    "Checkpoint",
    "list_checkpoints",
    "load_checkpoint",
    "load_named_config",
    "save_checkpoint",
    "sha256_file",
    "shipped_configs",
    "skfm_home",
]
