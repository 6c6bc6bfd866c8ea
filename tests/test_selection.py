"""The margin a cross-validated gain must clear (skfm._selection)."""

import numpy as np
import pytest

from skfm._selection import gain_margin


def test_margin_is_the_corrected_standard_error_times_z():
    gains = np.array([0.1, 0.0, 0.05, 0.02, 0.08, 0.03])
    naive = gains.std(ddof=1) / np.sqrt(len(gains))
    corrected = gains.std(ddof=1) * np.sqrt(1 / 6 + 1 / (3 - 1))
    assert gain_margin(gains, n_folds=3, z=1.0) == pytest.approx(corrected)
    assert gain_margin(gains, n_folds=3) == pytest.approx(2 * corrected)
    assert corrected > 1.5 * naive  # without the correction k-fold gains look surer than they are


def test_constant_gain_is_always_clear():
    assert gain_margin([0.01, 0.01, 0.01], n_folds=3) == 0.0
