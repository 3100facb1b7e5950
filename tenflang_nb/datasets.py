"""``tenflang_nb.datasets``: the classic 2-D data sets and a train/test split (the core's
``datasets``, numpy only; see it for the details).

>>> from tenflang_nb import datasets
>>> train, test = datasets.moons(100, test=0.2)
>>> len(train), len(test)
(80, 20)
"""

from .core.datasets import (
    DATASETS,
    Dataset,
    Split,
    blobs,
    circles,
    make,
    moons,
    points,
    spirals,
    split,
    xor,
)

__all__ = ["DATASETS", "Dataset", "Split", "blobs", "circles", "make", "moons", "points",
           "spirals", "split", "xor"]
