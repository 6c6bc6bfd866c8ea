"""Start a pretraining run from an exported checkpoint, the same network or a grown one.

:func:`initial_weights` is what ``--init`` calls. A model family may let a
config ask for more of some sizes than the checkpoint has (a :class:`Growth`:
more layers, wider feed-forward blocks); :func:`load_grown` then starts the
larger network as the checkpoint's function (function-preserving growth, as
Net2Net's "deeper" and "wider" operators) and training uses the new capacity:

* every checkpoint tensor is copied, into the leading slice of a larger one
  (a feed-forward block's extra hidden units get fresh input weights);
* the projections that end a residual branch (``Growth.residual_outputs``)
  are zero wherever the checkpoint gave them no value: a new block adds zero
  to the residual stream, and new hidden units reach it through zero weights.

Anything else that differs (the width of the residual stream, the feature
count of an encoder) is refused: those changes are not function-preserving.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch


@dataclass(frozen=True)
class Growth:
    """What a model family may grow from a checkpoint, and how it stays the same function.

    Parameters
    ----------
    fields : tuple of str
        Architecture config fields that may be larger than the checkpoint's.
    residual_outputs : tuple of str
        Substrings of the state-dict names of the projections that end a
        residual branch (weights and biases); their new parts start at zero.
    """

    fields: tuple[str, ...]
    residual_outputs: tuple[str, ...]


def check_growth(checkpoint_config: dict, config: dict, fields: tuple[str, ...]) -> None:
    """Refuse a config that differs from the checkpoint's other than by larger ``fields``.

    Raises
    ------
    ValueError
        If a field outside ``fields`` differs, or one of them is smaller.

    Examples
    --------
    >>> from skfm.pretrain.warm_start import check_growth
    >>> check_growth({"n_layers": 6, "d_model": 128}, {"n_layers": 9, "d_model": 128}, ("n_layers",))
    >>> check_growth({"n_layers": 6, "d_model": 128}, {"n_layers": 6, "d_model": 192}, ("n_layers",))
    Traceback (most recent call last):
    ...
    ValueError: cannot grow d_model from 128 to 192: only n_layers may grow
    """
    for field in sorted(set(checkpoint_config) | set(config)):
        old, new = checkpoint_config.get(field), config.get(field)
        if old == new:
            continue
        if field not in fields:
            raise ValueError(f"cannot grow {field} from {old} to {new}: only "
                             f"{', '.join(fields) or 'nothing'} may grow")
        if old is None or new is None or new < old:
            raise ValueError(f"cannot grow {field} from {old} to {new}: it may only increase")


def load_grown(model: torch.nn.Module, weights: dict[str, np.ndarray],
               residual_outputs: tuple[str, ...] = ()) -> list[str]:
    """Load ``weights`` into ``model``, growing the tensors and blocks the checkpoint lacks.

    Parameters
    ----------
    model : torch.nn.Module
        The freshly initialised (larger or equal) model; changed in place.
    weights : dict of str to ndarray
        The checkpoint's tensors by state-dict name.
    residual_outputs : tuple of str
        Name substrings of tensors whose parts without a checkpoint value are
        set to zero (the rest keep the model's initialisation).

    Returns
    -------
    list of str
        The model's tensors that were not simply copied: grown into
        (``"name: (8, 4) -> (16, 4)"``) or new (``"name: new"``). Empty when
        the architectures are the same.

    Raises
    ------
    ValueError
        If the checkpoint holds a tensor the model lacks, or one that does not
        fit the leading slice of the model's (same dimensions, none larger).

    Examples
    --------
    >>> import torch
    >>> from skfm.pretrain.warm_start import load_grown
    >>> small, large = torch.nn.Linear(2, 3), torch.nn.Linear(4, 3)  # two more inputs
    >>> load_grown(large, {k: v.numpy() for k, v in small.state_dict().items()}, ("weight",))
    ['weight: (3, 2) -> (3, 4)']
    >>> x = torch.randn(5, 2)
    >>> bool(torch.allclose(large(torch.cat([x, torch.randn(5, 2)], 1)), small(x)))
    True
    """
    target = model.state_dict()
    unknown = sorted(set(weights) - set(target))
    if unknown:
        raise ValueError(f"the checkpoint holds tensors the model does not have: {unknown[:5]}")
    changes, merged = [], {}
    for name, value in target.items():
        source = weights.get(name)
        if source is not None and source.shape == tuple(value.shape):
            merged[name] = torch.from_numpy(np.array(source)).to(value.dtype)
            continue
        grown = value.clone()
        if any(part in name for part in residual_outputs):
            grown.zero_()
        if source is None:
            changes.append(f"{name}: new")
        elif source.ndim != value.dim() or any(
                s > t for s, t in zip(source.shape, value.shape, strict=True)):
            raise ValueError(f"cannot grow {name} from {tuple(source.shape)} to "
                             f"{tuple(value.shape)}: only a larger size of the same tensor grows")
        else:
            grown[tuple(slice(0, s) for s in source.shape)] = torch.from_numpy(
                np.array(source)).to(value.dtype)
            changes.append(f"{name}: {tuple(source.shape)} -> {tuple(value.shape)}")
        merged[name] = grown
    model.load_state_dict(merged)
    return changes


def initial_weights(model: torch.nn.Module, checkpoint: str | Path, kind: str,
                    growth: Growth | None = None) -> dict:
    """Load the weights of an exported ``kind`` checkpoint into ``model``.

    The architecture must be the checkpoint's, except for larger
    ``growth.fields``: the model then starts as the checkpoint's function and
    trains the added capacity (:func:`load_grown`).

    Returns the record a card keeps of it: ``checkpoint`` (as given),
    ``sha256``, the checkpoint card's ``command`` and training ``steps``, and
    ``grown`` (what growth added) where the architectures differ.

    Raises
    ------
    ValueError
        If the checkpoint holds another kind of model or another architecture.
    """
    from skfm._weights import load_checkpoint

    ckpt = load_checkpoint(checkpoint)
    if ckpt.card.get("model") != kind:
        raise ValueError(f"cannot start a {kind} run from {checkpoint!r}: it holds a "
                         f"{ckpt.card.get('model')!r} model")
    record = {"checkpoint": str(checkpoint), "sha256": ckpt.card["sha256"],
              "command": ckpt.card.get("command"),
              "steps": ckpt.card.get("training", {}).get("steps")}
    if growth is not None:
        check_growth(ckpt.card["config"], model.config.to_dict(), growth.fields)
        grown = load_grown(model, ckpt.state, growth.residual_outputs)
        return {**record, "grown": grown} if grown else record
    try:
        model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in ckpt.state.items()})
    except RuntimeError as err:
        raise ValueError(f"checkpoint {checkpoint!r} does not fit the config's architecture "
                         f"({ckpt.card.get('config')}): {err}") from None
    return record
