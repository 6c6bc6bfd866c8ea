"""One loader for the modules of every model family: checkpoint (or ``random:<config>``) -> module.

A :class:`ModelFamily` says how a family's config becomes an ``nn.Module``; the
estimators declare theirs next to the model they wrap. For any family,
``checkpoint`` is what :func:`~skfm._weights.load_checkpoint` accepts (a shipped
name, a path, a name in ``$SKFM_HOME``, a ``hf://`` id) or ``"random:<config>"``:
the architecture of a named config (:func:`~skfm._weights.load_named_config`, e.g.
``"random:small"``, or a config json path) at a fixed random initialisation
(seed 0), the baseline that a pretrained checkpoint must beat.

Weights are read, checked against the family and cached once per checkpoint
(:func:`load_weights`); estimators that only run a module share one per
checkpoint and device (:func:`shared_model`, frozen, in eval mode), those that
train get a fresh copy (:func:`fresh_model`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .named_configs import load_named_config
from .registry import load_checkpoint

RANDOM_PREFIX = "random:"
RANDOM_WEIGHTS = "random initialisation, seed 0"
_CACHE_SIZE = 8
_lock = threading.Lock()


@dataclass(frozen=True)
class ModelFamily:
    """How the checkpoints of one model family become modules.

    Attributes
    ----------
    name : str
        The ``"model"`` entry of its checkpoint cards, and the prefix of its named
        configs (``configs/<name>-<config>.json``).
    build : callable
        ``build(config) -> nn.Module``: the module of an architecture config (a
        card's ``"config"``, a named config's ``"model"``), at torch's current
        random state.
    label : str
        How an error message names the family (``"... holds a 'mantis' model, not
        <label>"``).
    randomize : callable or None, default=None
        ``randomize(module)``, run after ``build`` for ``random:<config>`` (still
        under seed 0), for a family whose construction leaves some weights at zero.
    """

    name: str
    build: Callable[[dict], nn.Module]
    label: str
    randomize: Callable[[nn.Module], None] | None = None


@dataclass(frozen=True, eq=False)
class Weights:
    """The architecture config, weights and card of a loaded checkpoint.

    Shared by every caller: the arrays of ``state`` are read-only, and neither
    ``config`` nor ``card`` should be modified.
    """

    config: dict
    state: dict[str, np.ndarray]
    card: dict


def _random_weights(name: str, family: ModelFamily) -> Weights:
    config = load_named_config(family.name, name)["model"]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        module = family.build(config)
        if family.randomize is not None:
            family.randomize(module)
    state = {}
    for key, tensor in module.state_dict().items():
        array = tensor.detach().numpy().copy()
        array.flags.writeable = False
        state[key] = array
    card = {"model": family.name, "config": config, "weights": RANDOM_WEIGHTS}
    return Weights(config=config, state=state, card=card)


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _load_weights(checkpoint: str, family: ModelFamily) -> Weights:
    if checkpoint.startswith(RANDOM_PREFIX):
        return _random_weights(checkpoint.removeprefix(RANDOM_PREFIX), family)
    ckpt = load_checkpoint(checkpoint)
    if ckpt.card.get("model") != family.name:
        raise ValueError(
            f"checkpoint {checkpoint!r} holds a {ckpt.card.get('model')!r} model, "
            f"not {family.label}"
        )
    return Weights(config=ckpt.card["config"], state=ckpt.state, card=ckpt.card)


def _module(weights: Weights, family: ModelFamily) -> nn.Module:
    with torch.random.fork_rng(devices=[]):  # its initialisation is overwritten: draw nothing
        module = family.build(weights.config)
    module.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in weights.state.items()})
    return module


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _shared_model(checkpoint: str, family: ModelFamily, device: str) -> tuple[nn.Module, dict]:
    weights = _load_weights(checkpoint, family)
    return _module(weights, family).eval().requires_grad_(False).to(device), weights.card


def load_weights(checkpoint, family: ModelFamily) -> Weights:
    """The config, weights and card of ``checkpoint`` (see the module docstring), checked to
    hold a ``family`` model; cached.

    Raises
    ------
    ValueError
        If the checkpoint cannot be found or verified, holds another family's model, or
        names an unknown config.

    Examples
    --------
    >>> from torch import nn
    >>> linear = ModelFamily("tabswift", lambda config: nn.Linear(config["d_model"], 1),
    ...                      label="tabswift")
    >>> weights = load_weights("random:tiny", linear)
    >>> weights.card["weights"], weights.state["weight"].shape
    ('random initialisation, seed 0', (1, 32))
    """
    with _lock:
        return _load_weights(str(checkpoint), family)


def shared_model(checkpoint, family: ModelFamily, device) -> tuple[nn.Module, dict]:
    """The module of ``checkpoint`` on ``device`` and its card, shared by all callers.

    The module is in eval mode with ``requires_grad`` off; one is built per
    (checkpoint, family, device) and cached. Train a :func:`fresh_model` instead.
    """
    with _lock:
        return _shared_model(str(checkpoint), family, str(device))


def fresh_model(checkpoint, family: ModelFamily) -> nn.Module:
    """A new module of ``family`` with the weights of ``checkpoint``, on CPU, the caller's own."""
    return _module(load_weights(checkpoint, family), family)


def clear_cache() -> None:
    """Forget the cached weights and shared modules (the next load reads the files again)."""
    with _lock:
        _shared_model.cache_clear()
        _load_weights.cache_clear()
