"""Write training_data.csv: 100 noisy points on the line y = 2.5 x - 1, as CSV with a header.

The seed fixes the file, so rerunning this script reproduces the committed data byte for byte:

    python make_data.py            # writes training_data.csv next to this script
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

TRUE_A = 2.5
TRUE_B = -1.0
N = 100
NOISE = 0.3
SEED = 7


def make(n: int = N, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    # centred-ish x keeps the problem well conditioned, so plain gradient descent with the
    # default learning rate converges; far-off x (say 100..110) would need a tiny rate
    x = np.round(rng.uniform(-1.0, 3.0, size=n), 3)
    y = np.round(TRUE_A * x + TRUE_B + rng.normal(0.0, NOISE, size=n), 3)
    return x, y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path,
                        default=Path(__file__).with_name("training_data.csv"))
    args = parser.parse_args()
    x, y = make()
    rows = ["x,y"] + [f"{a!r},{b!r}" for a, b in zip(x.tolist(), y.tolist(), strict=True)]
    args.output.write_text("\n".join(rows) + "\n")
    print(f"wrote {len(x)} rows to {args.output}")


if __name__ == "__main__":
    main()
