"""Backbone checkpoints of the Time-PEFT forecaster: their model family and loader."""

from __future__ import annotations

from skfm._weights import ModelFamily, fresh_model, load_weights
from skfm.timeseries.forecasting.backbone import BackboneConfig, TimeSeriesBackbone

#: Masked reconstruction plus an auxiliary forecasting loss (its card gives the recipe); it
#: passes the release gate of docs/benchmarks/timepeft.md: every adapter mode has a lower
#: mean MSE over the dev sets than on the random initialisation ``"random:small"``.
DEFAULT_CHECKPOINT = "timepeft-backbone-v2"
#: How backbone checkpoints become modules (see :mod:`skfm._weights.loader`).
BACKBONE = ModelFamily(
    "timeseries-backbone", lambda config: TimeSeriesBackbone(BackboneConfig(**config)),
    label="a timeseries-backbone",
)


def load_backbone(checkpoint: str) -> TimeSeriesBackbone:
    """A fresh :class:`TimeSeriesBackbone` with the weights of ``checkpoint``.

    ``checkpoint`` is a shipped name, a path, a name in ``$SKFM_HOME``, a
    ``hf://`` id, or ``"random:<config>"`` (``"random:small"``,
    ``"random:tiny"`` or a config json path): the architecture at a fixed
    random initialisation, the baseline a pretrained backbone must beat.

    Examples
    --------
    >>> from skfm.timeseries.forecasting.loading import load_backbone
    >>> load_backbone("random:tiny").config.patch_len
    8
    """
    return fresh_model(checkpoint, BACKBONE)


def backbone_config(checkpoint: str) -> BackboneConfig:
    """The architecture of ``checkpoint`` (read from its card; no module is built)."""
    return BackboneConfig(**load_weights(checkpoint, BACKBONE).config)
