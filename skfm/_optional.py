"""Optional dependencies, imported by the feature that needs them when it is used.

``import skfm`` imports none of them (``tests/test_architecture.py`` checks it); a function that
needs one calls the importer below, which says how to install the package when it is missing.
"""

from __future__ import annotations


def import_matplotlib_pyplot(backend: str | None = None):
    """``matplotlib.pyplot``, imported now; matplotlib is the ``plot`` extra of skfm.

    Parameters
    ----------
    backend : str or None, default=None
        Select this matplotlib backend first (``"Agg"``: files only, no window).

    Returns
    -------
    module
        ``matplotlib.pyplot``.

    Raises
    ------
    ImportError
        matplotlib is not installed; the message says ``pip install 'skfm[plot]'``.

    Examples
    --------
    >>> from skfm._optional import import_matplotlib_pyplot
    >>> plt = import_matplotlib_pyplot()
    >>> plt.__name__
    'matplotlib.pyplot'
    """
    try:
        import matplotlib
    except ImportError as err:
        raise ImportError(
            "plotting needs matplotlib, an optional dependency of skfm: "
            "pip install 'skfm[plot]' (or pip install matplotlib)"
        ) from err
    if backend is not None:
        matplotlib.use(backend)
    import matplotlib.pyplot as plt

    return plt
