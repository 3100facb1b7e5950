"""Write training_data.txt: the original TenFlang's gradient-descent test data, 10 vectors.

The 2016 test fed the small net the inputs a=1, b=2, c=3 with targets close to
logistic(0.4), logistic(0.4) and logistic(0.3), perturbed by a little noise, and expected the
weights f~0.4, g~0.2, h~0.1 (since 1*0.4 = 2*0.2 = 0.4 and 3*0.1 = 0.3). Its noise helper is
not preserved; small uniform noise plays its part here. Fixed seed: reproducible file.

    python make_data.py            # writes training_data.txt next to this script
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

N = 10
NOISE = 0.01  # half-width of the uniform noise on each target
SEED = 10


def logistic(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


def make(n: int = N, seed: int = SEED) -> list[dict[str, float]]:
    rng = np.random.default_rng(seed)
    targets = {"m": logistic(0.4), "n": logistic(0.4), "p": logistic(0.3)}
    rows = []
    for _ in range(n):
        row = {"a": 1.0, "b": 2.0, "c": 3.0}
        for name, t in targets.items():
            row[name] = round(t + float(rng.uniform(-NOISE, NOISE)), 5)
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path,
                        default=Path(__file__).with_name("training_data.txt"))
    args = parser.parse_args()
    # the original's data format holds one vector per file; brace notation holds all ten
    lines = ["{" + ", ".join(f"{k}: {v!r}" for k, v in row.items()) + "}" for row in make()]
    args.output.write_text("\n".join(lines) + "\n")
    print(f"wrote {len(lines)} vectors to {args.output}")


if __name__ == "__main__":
    main()
