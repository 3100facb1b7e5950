"""Write training_data.txt: 200 noisy samples of y = logistic(1.7 x), one vector per line.

The seed fixes the file, so rerunning this script reproduces the committed data byte for byte:

    python make_data.py            # writes training_data.txt next to this script
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

TRUE_W = 1.7
N = 200
NOISE = 0.02
SEED = 2016  # the year of the original TenFlang


def make(n: int = N, seed: int = SEED) -> list[tuple[float, float]]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3.0, 3.0, size=n)
    y = 1.0 / (1.0 + np.exp(-TRUE_W * x)) + rng.normal(0.0, NOISE, size=n)
    # rounding keeps the file readable; 4 decimals is far below the noise
    return [(round(float(a), 4), round(float(b), 4)) for a, b in zip(x, y, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path,
                        default=Path(__file__).with_name("training_data.txt"))
    args = parser.parse_args()
    lines = [f"{{x: {x}, y: {y}}}" for x, y in make()]
    args.output.write_text("\n".join(lines) + "\n")
    print(f"wrote {len(lines)} vectors to {args.output}")


if __name__ == "__main__":
    main()
