"""Checkpoints of skfm models: safetensors weights plus a JSON card, never pickle."""

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
    "save_checkpoint",
    "sha256_file",
    "skfm_home",
]
