"""Accuracy of the digits classifier: the share of images whose largest logit is the label.

Two ways to use it, both printing ``accuracy 0.9xxx (n of 1797 images)``:

    tfevaluate shape.tf digits.npz weights.txt | python accuracy.py
    python accuracy.py --weights weights.txt       # the same, through the Python API
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from tenflang_nb.core import api
from tenflang_nb.core.bindings import weight_record
from tenflang_nb.core.datafiles import parse_data, read_data

HERE = Path(__file__).parent


def logits_from_text(text: str) -> np.ndarray:
    """The ``logits`` column of tfevaluate's output (one brace vector per image)."""
    return parse_data(text, "<tfevaluate output>").columns["logits"]


def logits_from_api(shape: Path, data: Path, weights: Path) -> np.ndarray:
    program = api.parse_file(shape)
    w = weight_record(program, read_data(weights))
    results = api.evaluate(program, data, w)
    return np.array([r["logits"] for r in results])


def accuracy(logits: np.ndarray, labels: np.ndarray) -> float:
    # labels are one-hot rows, so argmax recovers the digit
    return float(np.mean(np.argmax(logits, axis=1) == np.argmax(labels, axis=1)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("predictions", nargs="?", default="-",
                        help="tfevaluate's output (default: standard input)")
    parser.add_argument("--data", type=Path, default=HERE / "digits.npz")
    parser.add_argument("--weights", type=Path,
                        help="evaluate shape.tf with these weights instead of reading "
                             "tfevaluate's output")
    parser.add_argument("--shape", type=Path, default=HERE / "shape.tf")
    args = parser.parse_args(argv)
    with np.load(args.data) as archive:
        labels = archive["y"]
    if args.weights is not None:
        logits = logits_from_api(args.shape, args.data, args.weights)
    elif args.predictions == "-":
        logits = logits_from_text(sys.stdin.read())
    else:
        logits = logits_from_text(Path(args.predictions).read_text())
    if logits.shape[0] != labels.shape[0]:
        parser.error(f"{logits.shape[0]} predictions for {labels.shape[0]} images")
    acc = accuracy(logits, labels)
    correct = round(acc * len(labels))
    print(f"accuracy {acc:.4f} ({correct} of {len(labels)} images)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
