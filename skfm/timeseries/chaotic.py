"""Multichannel series from chaotic dynamical systems, integrated offline with RK4.

The "complex" forecasting datasets of the Time-PEFT evaluation (Lorenz,
coupled Lorenz, double pendulum), generated here without the ``dysts``
package: a fixed-step fourth-order Runge-Kutta integrator, a discarded
transient, then every ``sample_every``-th state.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def integrate(
    derivative: Callable[[np.ndarray], np.ndarray],
    state: np.ndarray,
    n_samples: int,
    dt: float,
    sample_every: int,
    transient: int = 1000,
) -> np.ndarray:
    """Classical RK4 with step ``dt``; returns every ``sample_every``-th state: (n_samples, S).

    The first ``transient`` steps are discarded (the state settles on the attractor).

    Examples
    --------
    >>> import numpy as np
    >>> decay = integrate(lambda s: -s, np.ones(1), n_samples=3, dt=0.01, sample_every=100,
    ...                   transient=0)
    >>> np.round(decay[:, 0], 4)  # exp(-1), exp(-2), exp(-3)
    array([0.3679, 0.1353, 0.0498])
    """
    x = np.asarray(state, dtype=float).copy()
    out = np.empty((n_samples, len(x)))

    def step(x: np.ndarray) -> np.ndarray:
        k1 = derivative(x)
        k2 = derivative(x + 0.5 * dt * k1)
        k3 = derivative(x + 0.5 * dt * k2)
        k4 = derivative(x + dt * k3)
        return x + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)

    for _ in range(transient):
        x = step(x)
    for i in range(n_samples):
        for _ in range(sample_every):
            x = step(x)
        out[i] = x
    return out


def lorenz(n_samples: int = 4000, random_state: int = 0) -> np.ndarray:
    """The Lorenz-63 system (sigma 10, rho 28, beta 8/3), sampled every 0.01: (n, 3).

    Examples
    --------
    >>> lorenz(100).shape
    (100, 3)
    """

    def derivative(s: np.ndarray) -> np.ndarray:
        x, y, z = s
        return np.array([10.0 * (y - x), x * (28.0 - z) - y, x * y - 8.0 / 3.0 * z])

    start = np.random.default_rng(random_state).normal(0, 1, 3) + [1.0, 1.0, 20.0]
    return integrate(derivative, start, n_samples, dt=0.01, sample_every=1)


def coupled_lorenz(n_samples: int = 4000, coupling: float = 2.0, random_state: int = 0) -> np.ndarray:
    """Two Lorenz-63 systems, the second driven by the first through ``x``, sampled every 0.01: (n, 6).

    The driven system's ``x`` gets ``coupling * (x_1 - x_2)``, so information
    flows from channels 0-2 to channels 3-5 (and not back).

    Examples
    --------
    >>> coupled_lorenz(100).shape
    (100, 6)
    """

    def derivative(s: np.ndarray) -> np.ndarray:
        x1, y1, z1, x2, y2, z2 = s
        return np.array([
            10.0 * (y1 - x1), x1 * (28.0 - z1) - y1, x1 * y1 - 8.0 / 3.0 * z1,
            10.0 * (y2 - x2) + coupling * (x1 - x2), x2 * (28.0 - z2) - y2,
            x2 * y2 - 8.0 / 3.0 * z2,
        ])

    start = np.random.default_rng(random_state).normal(0, 1, 6) + [1, 1, 20, -1, -1, 20]
    return integrate(derivative, start, n_samples, dt=0.01, sample_every=1)


def double_pendulum(n_samples: int = 4000, random_state: int = 0) -> np.ndarray:
    """A frictionless double pendulum (unit masses and lengths, g 9.81), sampled every 0.02.

    Channels: the two angles (wrapped to [-pi, pi) through ``sin``) and the two
    angular velocities, ``[sin th1, sin th2, w1, w2]``: (n, 4).

    Examples
    --------
    >>> double_pendulum(100).shape
    (100, 4)
    """
    g = 9.81

    def derivative(s: np.ndarray) -> np.ndarray:
        t1, t2, w1, w2 = s
        delta = t1 - t2
        den = 3.0 - np.cos(2 * delta)
        a1 = (-3 * g * np.sin(t1) - g * np.sin(t1 - 2 * t2)
              - 2 * np.sin(delta) * (w2**2 + w1**2 * np.cos(delta))) / den
        a2 = (2 * np.sin(delta) * (2 * w1**2 + 2 * g * np.cos(t1) + w2**2 * np.cos(delta))) / den
        return np.array([w1, w2, a1, a2])

    start = np.r_[np.random.default_rng(random_state).uniform(2.0, 2.5, 2), 0.0, 0.0]
    states = integrate(derivative, start, n_samples, dt=0.005, sample_every=4, transient=0)
    return np.column_stack([np.sin(states[:, 0]), np.sin(states[:, 1]), states[:, 2:]])
