"""Make digits.npz ONCE from scikit-learn's copy of the UCI 8x8 handwritten digits.

scikit-learn is not a dependency of tenflang_nb: the committed digits.npz is all the example
needs. To regenerate it (byte-identical arrays; the zip container itself may differ):

    python3 -m venv /tmp/skl && /tmp/skl/bin/pip install scikit-learn
    /tmp/skl/bin/python make_data.py      # writes digits.npz next to this script

digits.npz holds two arrays whose first axis is the example (1,797 images), the layout
tfweightcalc reads from .npz files:

* ``x``: (1797, 64) float64, the 8x8 pixel intensities 0..16 divided by 16, row by row;
* ``y``: (1797, 10) float64, one-hot labels (y[i, k] = 1 when image i shows digit k).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def make() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits  # only here: the throwaway venv has it

    digits = load_digits()
    x = digits.data.astype(np.float64) / 16.0
    y = np.eye(10)[digits.target]
    return x, y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path,
                        default=Path(__file__).with_name("digits.npz"))
    args = parser.parse_args()
    x, y = make()
    # compressed: the pixels take 17 distinct values and the labels are one-hot, so the
    # ~1 MB of float64 shrinks to a small file
    np.savez_compressed(args.output, x=x, y=y)
    print(f"wrote x {x.shape} and y {y.shape} to {args.output} "
          f"({args.output.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
