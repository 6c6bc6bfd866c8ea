"""Start a pretraining run from an exported checkpoint, the same network or a grown one.

:func:`initial_weights` is what ``--init`` calls. A pretraining config may ask
for more layers or wider feed-forward blocks than the checkpoint it starts
from: :func:`load_grown` copies every
checkpoint tensor into the new model; what the checkpoint lacks keeps the new
model's initialisation, which the architectures here choose so that the grown
network computes what the checkpoint did (function-preserving growth, as
Net2Net's "deeper" and "wider" operators):

* a block the checkpoint has no weights for starts as the identity: its
  residual branches end in zero-initialised projections (TabSwift's
  ``GatedAttention.out`` and ``Block.ffn[2]``);
* a tensor the checkpoint holds at a smaller size is copied into its leading
  slice: a feed-forward block's extra hidden units get random input weights
  and the zero output weights of the new model, so they add nothing until
  trained.

Which config fields may grow is the model's to say (:func:`check_growth`, e.g.
TabSwift's ``n_layers`` and ``ffn_factor``); anything else that differs (the
width of the residual stream, the feature count of the encoder) is refused:
those changes are not function-preserving.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch


def check_growth(checkpoint_config: dict, config: dict, growable: tuple[str, ...]) -> None:
    """Refuse a config that differs from the checkpoint's other than by growing ``growable``.

    Raises
    ------
    ValueError
        If a field outside ``growable`` differs, or a ``growable`` one is smaller.

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
        if field not in growable:
            raise ValueError(f"cannot grow {field} from {old} to {new}: only "
                             f"{', '.join(growable) or 'nothing'} may grow")
        if old is None or new is None or new < old:
            raise ValueError(f"cannot grow {field} from {old} to {new}: it may only increase")


def load_grown(model: torch.nn.Module, weights: dict[str, np.ndarray]) -> list[str]:
    """Load ``weights`` into ``model``, growing tensors and blocks the checkpoint lacks.

    Parameters
    ----------
    model : torch.nn.Module
        The freshly initialised (larger or equal) model; changed in place.
    weights : dict of str to ndarray
        The checkpoint's tensors by state-dict name.

    Returns
    -------
    list of str
        The names of the model's tensors that were not simply copied: grown
        into (``"name: (8, 4) -> (16, 4)"``) or left at their initialisation
        (``"name: new"``). Empty when the architectures are the same.

    Raises
    ------
    ValueError
        If the checkpoint holds a tensor the model lacks, or one whose shape
        cannot be copied into the model's leading slice (same number of
        dimensions, none larger).

    Examples
    --------
    >>> import torch
    >>> from skfm.pretrain.warm_start import load_grown
    >>> small, large = torch.nn.Linear(2, 3), torch.nn.Linear(2, 5)
    >>> weights = {k: v.numpy() for k, v in small.state_dict().items()}
    >>> load_grown(large, weights)
    ['weight: (3, 2) -> (5, 2)', 'bias: (3,) -> (5,)']
    >>> bool(torch.equal(large.weight[:3], small.weight))
    True
    """
    target = model.state_dict()
    unknown = sorted(set(weights) - set(target))
    if unknown:
        raise ValueError(f"the checkpoint holds tensors the model does not have: {unknown[:5]}")
    changes, merged = [], {}
    for name, value in target.items():
        if name not in weights:
            changes.append(f"{name}: new")
            merged[name] = value
            continue
        source = torch.from_numpy(np.array(weights[name])).to(value.dtype)
        if source.shape == value.shape:
            merged[name] = source
            continue
        if source.dim() != value.dim() or any(
                s > t for s, t in zip(source.shape, value.shape, strict=True)):
            raise ValueError(f"cannot grow {name} from {tuple(source.shape)} to "
                             f"{tuple(value.shape)}: only a larger size of the same tensor grows")
        grown = value.clone()
        grown[tuple(slice(0, s) for s in source.shape)] = source
        merged[name] = grown
        changes.append(f"{name}: {tuple(source.shape)} -> {tuple(value.shape)}")
    model.load_state_dict(merged)
    return changes


def initial_weights(model: torch.nn.Module, checkpoint: str | Path, kind: str,
                    growable: tuple[str, ...] = ()) -> dict:
    """Load the weights of an exported ``kind`` checkpoint into ``model``.

    The architecture must be the checkpoint's, except that the config fields
    in ``growable`` may be larger: the model then computes what the checkpoint
    did and trains the added capacity (:mod:`skfm.pretrain.warm_start`).

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
    if growable:
        check_growth(ckpt.card["config"], model.config.to_dict(), growable)
        grown = load_grown(model, ckpt.state)
        return {**record, "grown": grown} if grown else record
    try:
        model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in ckpt.state.items()})
    except RuntimeError as err:
        raise ValueError(f"checkpoint {checkpoint!r} does not fit the config's architecture "
                         f"({ckpt.card.get('config')}): {err}") from None
    return record
