"""Progress bars of skfm's long loops, with one switch that silences all of them.

A loop (pretraining, fine-tuning, TabMGP rollouts, RDBEncoder's DuckDB query)
shows progress when its estimator's ``verbose`` (``progress`` for pretraining)
is true, unless the environment variable ``SKFM_PROGRESS`` is ``0`` (or
``false``, ``no``, ``off``): then none of skfm's bars is drawn, whatever
``verbose`` says. Every bar of skfm is made here, and the ``skfm`` command
prints skfm's log records without breaking the bars (:func:`console_logging`).
"""

from __future__ import annotations

import contextlib
import logging
import os

from tqdm.auto import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

ENV_VAR = "SKFM_PROGRESS"
_OFF = {"0", "false", "no", "off"}


def progress_enabled(verbose) -> bool:
    """Whether a loop asked to report progress (``verbose``) shows it.

    Parameters
    ----------
    verbose : bool or int
        The estimator's ``verbose`` (or pretraining's ``progress``).

    Returns
    -------
    bool
        ``bool(verbose)``, and False whenever ``SKFM_PROGRESS`` is ``0``,
        ``false``, ``no`` or ``off``.

    Examples
    --------
    >>> import os
    >>> from unittest import mock
    >>> from skfm._progress import progress_enabled
    >>> with mock.patch.dict(os.environ, {"SKFM_PROGRESS": "0"}):
    ...     progress_enabled(True)
    False
    >>> with mock.patch.dict(os.environ):
    ...     _ = os.environ.pop("SKFM_PROGRESS", None)
    ...     progress_enabled(True), progress_enabled(False)
    (True, False)
    """
    return bool(verbose) and os.environ.get(ENV_VAR, "").strip().lower() not in _OFF


def progress_bar(iterable=None, *, verbose, **kwargs) -> tqdm:
    """A tqdm bar, drawn only when :func:`progress_enabled` says so.

    Parameters
    ----------
    iterable : iterable, optional
        What to iterate over; without it, advance the bar with ``update``.
    verbose : bool or int
        The estimator's ``verbose``.
    **kwargs
        Passed to ``tqdm`` (``total``, ``desc``, ``unit``, ...).

    Returns
    -------
    tqdm.tqdm
        Disabled (it draws nothing) when progress is off.

    Examples
    --------
    >>> from skfm._progress import progress_bar
    >>> with progress_bar(total=3, verbose=False, desc="steps") as bar:
    ...     for _ in range(3):
    ...         bar.update(1)
    >>> bar.disable
    True
    """
    return tqdm(iterable, disable=not progress_enabled(verbose), **kwargs)


@contextlib.contextmanager
def console_logging(name: str = "skfm", level: int = logging.INFO):
    """Print the log records of logger ``name`` (``level`` and up) on stderr, meanwhile.

    Records are written through tqdm, so an active progress bar is redrawn
    below them instead of being broken. The ``skfm`` command runs in this
    context; in your own code, configure :mod:`logging` as usual.

    Parameters
    ----------
    name : str, default="skfm"
    level : int, default=logging.INFO

    Examples
    --------
    >>> import logging
    >>> from skfm._progress import console_logging
    >>> with console_logging():
    ...     logging.getLogger("skfm.demo").info("shown on stderr")
    """
    logger = logging.getLogger(name)
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        with logging_redirect_tqdm(loggers=[logger], tqdm_class=tqdm):
            yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)
