"""What a training run records: one :class:`Record` per step (the loss, the gradient's size,
a compact :class:`Snapshot` of the weights, the test loss), kept in bounded memory by a
:class:`History` however long the run (``train.py`` writes them; figures and the landscape
read them).
"""

from __future__ import annotations

import dataclasses
import math
import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import overload

import numpy as np

__all__ = ["History", "Packing", "Record", "Snapshot"]

_DOUBLE = struct.Struct("d").pack  # a float's 8 bytes, as numpy's float64 holds them
_FLOAT64 = np.dtype(np.float64)


class Snapshot(Mapping[str, "float | np.ndarray"]):
    """The weights one step evaluated, as a history keeps them for drawing the path of
    descent: their numbers packed into one ``bytes`` (8 bytes a number), where each weight
    lies told by a :class:`Packing` that every snapshot of a run shares. A dict of copies
    took 700 bytes for XOR's 17 numbers (the dict, an array object a weight), this 220; a
    kernel after lab 06 holds over 5000 snapshots (issue 26). Read like the dict it was: a
    scalar weight is a float, any other an array of its own.

    >>> packing = Packing.of({"w": 0.5, "W": np.array([[1.0, 2.0]])})
    >>> snap = packing.pack({"w": 0.5, "W": np.array([[1.0, 2.0]])})
    >>> snap["w"], snap["W"], list(snap), dict(snap)["W"].shape
    (0.5, array([[1., 2.]]), ['w', 'W'], (1, 2))
    """

    __slots__ = ("_packed", "_packing")

    def __init__(self, packing: Packing, packed: bytes) -> None:
        self._packing = packing
        self._packed = packed

    def __getitem__(self, name: str) -> float | np.ndarray:
        start, stop, shape = self._packing.places[name]
        values = np.frombuffer(self._packed, np.float64, stop - start, 8 * start)
        return float(values[0]) if shape == () else values.reshape(shape).copy()

    def __iter__(self) -> Iterator[str]:
        return iter(self._packing.places)

    def __len__(self) -> int:
        return len(self._packing.places)

    def __repr__(self) -> str:
        return repr(dict(self))


@dataclass(frozen=True)
class Packing:
    """Where each weight's numbers lie in a :class:`Snapshot`: name -> (start, stop, shape),
    in numbers; shape ``()`` is a float."""

    places: dict[str, tuple[int, int, tuple[int, ...]]]
    size: int  # how many numbers a snapshot holds

    @classmethod
    def of(cls, weights: Mapping[str, object]) -> Packing:
        places, start = {}, 0
        for name, value in weights.items():
            shape = np.shape(value)  # type: ignore[arg-type]
            stop = start + math.prod(shape)
            places[name] = (start, stop, shape)
            start = stop
        return cls(places, start)

    def pack(self, weights: Mapping[str, object]) -> Snapshot:
        """A snapshot of ``weights`` (the names and shapes this packing was made from).

        Once a training step (1 microsecond for XOR's weights, as their dict of copies)."""
        parts = []
        for name in self.places:
            value = weights[name]
            parts.append(_DOUBLE(value) if type(value) is float
                         else value.tobytes() if type(value) is np.ndarray
                         and value.dtype is _FLOAT64
                         else np.asarray(value, dtype=np.float64).tobytes())
        packed = b"".join(parts)
        if len(packed) != 8 * self.size:  # its numbers would be read back as another weight's
            raise ValueError(f"weights of {len(packed) // 8} numbers, not {self.size}: "
                             f"not the weights {', '.join(self.places)} of this packing")
        return Snapshot(self, packed)


# slots: no dict per record, 40 of its 200 bytes (a long run keeps up to 10 000 records)
@dataclass(frozen=True, slots=True)
class Record:
    iteration: int  # updates made before this evaluation
    loss: float  # mean loss over the training set at these weights
    grad_norm: float  # ||mean gradient||_2 at these weights
    # the weights this step evaluated (a copy: a trainer's a compact Snapshot), for drawing
    # the path of descent; None once the history has thinned its snapshots out
    weights: Mapping[str, float | np.ndarray] | None = field(default=None, compare=False,
                                                             repr=False)
    # the mean loss over the test data at these weights (None: no test data was given)
    test_loss: float | None = None


class History(Sequence[Record]):
    """A run's records in bounded memory: the curve of any run, however long.

    All records are kept until there are ``limit`` of them; then only those whose iteration
    is a multiple of a stride (doubled as often as needed), always with the first and the
    newest. Weight snapshots are thinned the same way to at most ``weight_limit`` records,
    since one snapshot is as big as the model. ``every`` tells the stride in force.

    >>> h = History(limit=4)
    >>> for i in range(10):
    ...     h.append(Record(i, 1.0 / (i + 1), 0.0))
    >>> [r.iteration for r in h], h.every
    ([0, 4, 8, 9], 4)
    """

    def __init__(self, limit: int = 10_000, weight_limit: int = 500) -> None:
        self.limit = limit
        self.weight_limit = weight_limit
        self.every = 1  # records kept: iterations that are multiples of this (and the newest)
        self.weights_every = 1
        self._records: list[Record] = []
        self._snapshots = 0  # records that hold weights

    def append(self, record: Record) -> None:
        records = self._records
        if records:
            newest = records[-1]  # no longer the newest: keep it only if a stride keeps it
            if newest.iteration % self.every:
                records.pop()
                self._snapshots -= newest.weights is not None
            elif newest.weights is not None and newest.iteration % self.weights_every:
                records[-1] = dataclasses.replace(newest, weights=None)
                self._snapshots -= 1
        records.append(record)
        self._snapshots += record.weights is not None
        # each thinning halves what is kept, so appending stays O(1) amortized
        if len(records) > self.limit:
            while len(records) > self.limit:
                self.every *= 2
                records[:-1] = [r for r in records[:-1] if r.iteration % self.every == 0]
            self._snapshots = sum(r.weights is not None for r in records)
        while self._snapshots > self.weight_limit:
            self.weights_every *= 2
            for i, r in enumerate(records[:-1]):
                if r.weights is not None and r.iteration % self.weights_every:
                    records[i] = dataclasses.replace(r, weights=None)
            self._snapshots = sum(r.weights is not None for r in records)

    def __len__(self) -> int:
        return len(self._records)

    @overload
    def __getitem__(self, index: int) -> Record: ...

    @overload
    def __getitem__(self, index: slice) -> list[Record]: ...

    def __getitem__(self, index: int | slice) -> Record | list[Record]:
        return self._records[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, History | list | tuple):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<History: {len(self)} records, every {self.every}>"
