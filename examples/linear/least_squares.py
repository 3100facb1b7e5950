"""The exact least-squares line through training_data.csv, for comparison with tfweightcalc.

    python least_squares.py [training_data.csv]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np


def fit(path: Path) -> tuple[float, float]:
    data = np.loadtxt(path, delimiter=",", skiprows=1)
    x, y = data[:, 0], data[:, 1]
    design = np.column_stack([x, np.ones_like(x)])
    (a, b), *_ = np.linalg.lstsq(design, y, rcond=None)
    return float(a), float(b)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else Path(__file__).with_name("training_data.csv")
    a, b = fit(path)
    print(f"least squares: a = {a!r}, b = {b!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
