"""Saving, finding, verifying and loading skfm checkpoints.

A checkpoint is a ``<name>.safetensors`` file holding the weights and a
``<name>.json`` card next to it describing the model (``"model"``, ``"config"``)
and the file (``"sha256"``, ``"size_bytes"``, ...). Checkpoints are looked up,
in order, as a file path, a name shipped in ``skfm/weights/``, a name in the
user cache :func:`skfm_home`, or a Hugging Face hub id
``"hf://owner/repo/filename.safetensors"``. Pickle is never used.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import safetensors.numpy
import safetensors.torch
import torch
from safetensors import SafetensorError

SUFFIX = ".safetensors"
CARD_SUFFIX = ".json"
HUB_PREFIX = "hf://"
_CACHE_SIZE = 8
_CHUNK = 2**20


@dataclass(frozen=True, eq=False)
class Checkpoint:
    """A verified checkpoint loaded in memory.

    Instances are cached and shared between callers: the arrays of ``state``
    are read-only, and neither ``card`` nor ``state`` should be modified.

    Attributes
    ----------
    name : str
        File name without the ``.safetensors`` suffix.
    path : pathlib.Path
        Resolved path of the ``.safetensors`` file.
    card : dict
        The JSON card, including ``"model"``, ``"config"`` and ``"sha256"``.
    state : dict of str to numpy.ndarray
        The weights; floating arrays are float32.
    """

    name: str
    path: Path
    card: dict
    state: dict[str, np.ndarray]


def skfm_home() -> Path:
    """Directory of user-cached checkpoints: ``$SKFM_HOME`` or ``~/.cache/skfm``.

    Returns
    -------
    pathlib.Path

    Examples
    --------
    >>> from skfm._weights import skfm_home
    >>> isinstance(skfm_home(), Path)
    True
    """
    return Path(os.environ.get("SKFM_HOME") or "~/.cache/skfm").expanduser()


def sha256_file(path: str | os.PathLike) -> str:
    """Hex sha256 digest of a file.

    Parameters
    ----------
    path : str or os.PathLike
        The file.

    Returns
    -------
    str

    Examples
    --------
    >>> import tempfile
    >>> from skfm._weights import sha256_file
    >>> with tempfile.NamedTemporaryFile() as f:
    ...     sha256_file(f.name)[:12]
    'e3b0c44298fc'
    """
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for chunk in iter(lambda: file.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _card_path(path: Path) -> Path:
    return path.with_suffix(CARD_SUFFIX)


def _with_suffix(name: str | os.PathLike) -> Path:
    path = Path(name)
    return path if path.suffix == SUFFIX else path.with_name(path.name + SUFFIX)


def _check_card(card: Any) -> None:
    if not isinstance(card, dict):
        raise ValueError(f"card must be a dict, got {type(card).__name__}.")
    if not isinstance(card.get("model"), str):
        raise ValueError("card must contain a 'model' entry (str).")
    if not isinstance(card.get("config"), dict):
        raise ValueError("card must contain a 'config' entry (dict).")
    try:
        json.dumps(card)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"card must be JSON serializable: {exc}") from exc


def _storage_dtype(storage_dtype: Any) -> np.dtype | None:
    if storage_dtype is None:
        return None
    dtype = np.dtype(storage_dtype)
    if dtype.kind != "f":
        raise ValueError(f"storage_dtype must be a floating dtype or None, got {storage_dtype!r}.")
    return dtype


def _to_numpy(name: str, value: Any, storage: np.dtype | None) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        value = (value.float() if value.dtype == torch.bfloat16 else value).numpy()
    array = np.asarray(value)
    if array.dtype.kind not in "biuf":
        raise ValueError(f"state[{name!r}] has unsupported dtype {array.dtype}.")
    if storage is not None and array.dtype.kind == "f":
        array = array.astype(storage)
    return np.ascontiguousarray(array)


#: The licence of weights skfm trains and ships: the package's own.
WEIGHTS_LICENCE = "BSD-3-Clause"


def save_checkpoint(
    path: str | os.PathLike,
    state: dict[str, Any],
    card: dict[str, Any],
    storage_dtype: str | np.dtype | None = "float16",
) -> Path:
    """Write ``state`` as a safetensors file and ``card`` as the JSON card next to it.

    Parameters
    ----------
    path : str or os.PathLike
        Target ``.safetensors`` path; the suffix is added if missing and parent
        directories are created.
    state : dict of str to array-like or torch.Tensor
        The weights. Floating arrays are stored as ``storage_dtype``; integer and
        boolean arrays are stored unchanged.
    card : dict
        JSON-serializable description with at least ``"model"`` (str) and
        ``"config"`` (dict). ``"file"``, ``"sha256"``, ``"size_bytes"`` and
        ``"storage_dtype"`` are added to the written card, and ``"licence"``
        (the package's, ``"BSD-3-Clause"``) unless the card names one.
    storage_dtype : str, numpy.dtype or None, default="float16"
        Floating dtype used on disk; ``None`` keeps each array's dtype.

    Returns
    -------
    pathlib.Path
        The path of the written ``.safetensors`` file.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from skfm._weights import save_checkpoint
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = save_checkpoint(f"{tmp}/tiny", {"w": np.ones(3)}, {"model": "m", "config": {}})
    ...     sorted(p.name for p in path.parent.iterdir())
    ['tiny.json', 'tiny.safetensors']
    """
    _check_card(card)
    storage = _storage_dtype(storage_dtype)
    tensors = {str(name): _to_numpy(name, value, storage) for name, value in state.items()}
    path = _with_suffix(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    safetensors.numpy.save_file(tensors, path)
    full_card = {
        "licence": WEIGHTS_LICENCE,
        **card,
        "file": path.name,
        "sha256": sha256_file(path),
        "size_bytes": path.stat().st_size,
        "storage_dtype": None if storage is None else storage.name,
    }
    _card_path(path).write_text(json.dumps(full_card, indent=2) + "\n", encoding="utf-8")
    return path


def _read_card(path: Path) -> dict:
    card_path = _card_path(path)
    if not card_path.is_file():
        raise ValueError(
            f"Checkpoint {path} has no card: expected {card_path.name} next to it "
            "(save checkpoints with save_checkpoint)."
        )
    try:
        card = json.loads(card_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"Checkpoint card {card_path} is not valid JSON: {exc}") from exc
    if not isinstance(card, dict) or not isinstance(card.get("sha256"), str):
        raise ValueError(f"Checkpoint card {card_path} has no 'sha256' entry.")
    return card


def _read_state(path: Path, data: bytes) -> dict[str, np.ndarray]:
    try:  # the torch reader also handles bfloat16, which numpy lacks
        raw = safetensors.torch.load(data)
    except SafetensorError as exc:
        raise ValueError(
            f"Checkpoint file {path} is not a valid safetensors file "
            f"(truncated or corrupted?): {exc}"
        ) from exc
    state = {}
    for key, tensor in raw.items():
        tensor = tensor.float() if tensor.dtype.is_floating_point else tensor
        array = tensor.numpy().copy()  # own the memory, not the file's bytes
        array.flags.writeable = False
        state[key] = array
    return state


def _version(path: Path) -> tuple[int, int, int | None]:
    """Modification times and size identifying the current contents of a checkpoint."""
    stat = path.stat()
    card_path = _card_path(path)
    card_mtime = card_path.stat().st_mtime_ns if card_path.is_file() else None
    return stat.st_mtime_ns, stat.st_size, card_mtime


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _load_verified(path: Path, version: tuple[int, int, int | None]) -> Checkpoint:
    """Read, verify and parse ``path``; cached on the path and its ``version``."""
    card = _read_card(path)
    data = path.read_bytes()
    if not data:
        raise ValueError(f"Checkpoint file {path} is empty.")
    actual = hashlib.sha256(data).hexdigest()
    if actual != card["sha256"]:
        raise ValueError(
            f"Checkpoint file {path} was changed or corrupted: its sha256 is {actual} but "
            f"its card records sha256 {card['sha256']}."
        )
    return Checkpoint(
        name=path.name.removesuffix(SUFFIX), path=path, card=card, state=_read_state(path, data)
    )


def _shipped_dir() -> Path:
    return Path(str(resources.files("skfm.weights")))


def _named(directory: Path, name: str) -> Path | None:
    path = directory / _with_suffix(name).name
    return path if path.is_file() else None


def _is_plain_name(text: str) -> bool:
    return bool(text) and "/" not in text and os.sep not in text and text not in {".", ".."}


def _available_names() -> list[str]:
    return [f"{card['name']} ({card['location']})" for card in list_checkpoints()]


def _unknown(text: str) -> ValueError:
    names = ", ".join(_available_names()) or "none"
    return ValueError(
        f"Unknown checkpoint {text!r}: it is not an existing file nor a shipped or cached "
        f"name. Available checkpoints: {names}. Hub checkpoints are loaded with "
        f"'{HUB_PREFIX}owner/repo/filename{SUFFIX}'."
    )


def _parse_hub_id(hub_id: str) -> tuple[str, str]:
    segments = hub_id.removeprefix(HUB_PREFIX).split("/")
    if len(segments) < 3 or any(part in {"", ".", ".."} for part in segments):
        raise ValueError(
            f"Invalid hub id {hub_id!r}; expected '{HUB_PREFIX}owner/repo/filename{SUFFIX}'."
        )
    owner, repo, *filename = segments
    return f"{owner}/{repo}", _with_suffix("/".join(filename)).as_posix()


def _hub_unreachable(hub_id: str, reason: str) -> ValueError:
    return ValueError(
        f"Could not download {hub_id!r}: the Hugging Face hub could not be reached ({reason}). "
        "To work offline, load a shipped or cached checkpoint by name (see "
        "skfm._weights.list_checkpoints()) or pass the path of a .safetensors file."
    )


def _download_from_hub(hub_id: str) -> Path:
    repo_id, filename = _parse_hub_id(hub_id)
    local_dir = skfm_home() / "hub" / repo_id
    local = local_dir / filename
    if local.is_file() and _card_path(local).is_file():
        return local
    try:
        from huggingface_hub import hf_hub_download
    except ImportError:
        reason = "huggingface_hub is not installed; pip install 'skfm[hub]'"
        raise _hub_unreachable(hub_id, reason) from None
    card_name = _card_path(Path(filename)).as_posix()
    try:
        weights = hf_hub_download(repo_id=repo_id, filename=filename, local_dir=local_dir)
        hf_hub_download(repo_id=repo_id, filename=card_name, local_dir=local_dir)
    except Exception as exc:  # offline, authentication, missing file: all are "unreachable"
        raise _hub_unreachable(hub_id, f"{type(exc).__name__}: {exc}") from exc
    return Path(weights)


def _resolve(checkpoint: str | os.PathLike) -> Path:
    text = os.fspath(checkpoint)
    if text.startswith(HUB_PREFIX):
        return _download_from_hub(text)
    path = Path(text).expanduser()
    for candidate in (path, _with_suffix(path)) if path.name else ():
        if candidate.is_file():
            return candidate
    if _is_plain_name(text):
        for directory in (_shipped_dir(), skfm_home()):
            found = _named(directory, text)
            if found is not None:
                return found
    raise _unknown(text)


def load_checkpoint(checkpoint: str | os.PathLike) -> Checkpoint:
    """Find, verify and load a checkpoint.

    ``checkpoint`` is resolved, in order, as (1) an existing ``.safetensors``
    file, (2) a checkpoint name (with or without suffix) shipped in
    ``skfm/weights/``, (3) a name in :func:`skfm_home`, or (4) a hub id
    ``"hf://owner/repo/filename.safetensors"``, downloaded once with its card
    into ``skfm_home()/hub/owner/repo/`` (needs ``huggingface_hub``).

    The file's sha256 must match its card. Loads are cached in-process by
    path, modification time and size, so loading again returns the same object.

    Parameters
    ----------
    checkpoint : str or os.PathLike
        Path, name or hub id.

    Returns
    -------
    Checkpoint
        With read-only float32 (floating) arrays.

    Raises
    ------
    ValueError
        If the checkpoint cannot be found, its card is missing or invalid, the
        file is empty, truncated or altered, or the hub cannot be reached.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from skfm._weights import load_checkpoint, save_checkpoint
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = save_checkpoint(f"{tmp}/tiny", {"w": np.ones(3)}, {"model": "m", "config": {}})
    ...     ckpt = load_checkpoint(path)
    >>> ckpt.name, ckpt.state["w"].dtype, ckpt.card["model"]
    ('tiny', dtype('float32'), 'm')
    """
    path = _resolve(checkpoint).resolve()
    return _load_verified(path, _version(path))


def _listing_card(path: Path, location: str) -> dict:
    try:
        card = _read_card(path)
    except ValueError:
        card = {}
    return {**card, "name": path.name.removesuffix(SUFFIX), "location": location}


def list_checkpoints() -> list[dict]:
    """Cards of the shipped checkpoints, then of those cached in :func:`skfm_home`.

    Returns
    -------
    list of dict
        Each card with ``"name"`` and ``"location"`` (``"shipped"`` or
        ``"cache"``) added; a checkpoint without a readable card is listed with
        only these two keys.

    Examples
    --------
    >>> from skfm._weights import list_checkpoints
    >>> all({"name", "location"} <= set(card) for card in list_checkpoints())
    True
    """
    locations = ((_shipped_dir(), "shipped"), (skfm_home(), "cache"))
    return [
        _listing_card(path, location)
        for directory, location in locations
        for path in sorted(directory.glob(f"*{SUFFIX}"))
    ]
