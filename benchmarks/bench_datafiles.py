"""Reading data files: tenflang's readers against numpy.loadtxt on the same numbers.

A million records of ``x [4]`` and ``y``: random normal numbers written as the tools write
them (``repr``, up to 17 significant digits), in three files: plain comma-separated numbers
for ``numpy.loadtxt`` (the contender), the same numbers as a CSV data file with a header
(``x[0],...,x[3],y``), and as brace notation (``{x: [...], y: ...}``). Each reader reads its
file end to end, from the path (best of ``--repeat`` runs). Before any time is printed, every
reader's arrays are checked to equal loadtxt's, bit for bit. The runs go round by round (each
reader once a round), so that a machine getting busier or quieter touches all alike.

Targets: CSV at most 1.5x numpy.loadtxt, brace at most 3x; peak memory at most 3x the
float64 data (tracemalloc over the whole ``read_data`` call, the file's text included; the
data is the table's float64 columns, 40 MB for a million records).

Two more rows, for information: a CSV with empty cells (``y`` null in every third record;
loadtxt reads the same file with ``nan`` written in those cells), and ``parse_data`` on
brace text already in memory.

    python benchmarks/bench_datafiles.py [--rows 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import math
import tempfile
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from common import machine, one_thread, seconds, table, timed

from tenflang_nb.core.datafiles import DataTable, parse_data, read_data

HEADER = "x[0],x[1],x[2],x[3],y"


@dataclass
class Files:
    numbers: Path  # for loadtxt
    csv: Path
    brace: Path
    nulls_csv: Path  # y empty in every third record
    nulls_numbers: Path  # the same with nan, for loadtxt
    values: np.ndarray  # (rows, 5): what every reader must give back


def write_files(rows: int, directory: Path) -> Files:
    values = np.random.default_rng(0).normal(size=(rows, 5))
    cells = [[repr(v) for v in row] for row in values.tolist()]
    numbers = [",".join(row) for row in cells]
    files = Files(directory / "numbers.txt", directory / "data.csv", directory / "data.txt",
                  directory / "nulls.csv", directory / "nulls.txt", values)
    files.numbers.write_text("\n".join(numbers) + "\n")
    files.csv.write_text(HEADER + "\n" + "\n".join(numbers) + "\n")
    files.brace.write_text("".join(f"{{x: [{r[0]}, {r[1]}, {r[2]}, {r[3]}], y: {r[4]}}}\n"
                                   for r in cells))
    null_rows = [",".join(row[:4]) + "," + (row[4] if k % 3 else "")
                 for k, row in enumerate(cells)]
    files.nulls_csv.write_text(HEADER + "\n" + "\n".join(null_rows) + "\n")
    files.nulls_numbers.write_text("\n".join(r if k % 3 else r + "nan"
                                             for k, r in enumerate(null_rows)) + "\n")
    return files


def loadtxt(path: Path) -> np.ndarray:
    return np.loadtxt(path, delimiter=",", dtype=np.float64)


def as_matrix(t: DataTable | np.ndarray) -> np.ndarray:
    if isinstance(t, np.ndarray):
        return t
    return np.column_stack([t.columns["x"], t.columns["y"]])


def peak_memory(fn: Callable[[], Any]) -> int:
    """Bytes allocated at the peak of ``fn()`` above what was allocated before it."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    result = fn()
    peak = tracemalloc.get_traced_memory()[1] - before
    tracemalloc.stop()
    del result
    return peak


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files = write_files(args.rows, Path(tmp))
        brace_text = files.brace.read_text()
        with_nulls = files.values.copy()
        with_nulls[::3, 4] = np.nan
        # name, file, the read (a table or an array), what it must give, the contender
        readers: list[tuple[str, Path, Callable[[], Any], np.ndarray, str]] = [
            ("numpy.loadtxt", files.numbers, lambda: loadtxt(files.numbers), files.values,
             "loadtxt"),
            ("tenflang read_data, CSV", files.csv, lambda: read_data(files.csv),
             files.values, "loadtxt"),
            ("tenflang read_data, brace", files.brace, lambda: read_data(files.brace),
             files.values, "loadtxt"),
            ("numpy.loadtxt, nan cells", files.nulls_numbers,
             lambda: loadtxt(files.nulls_numbers), with_nulls, "loadtxt, nan"),
            ("tenflang read_data, CSV, empty cells", files.nulls_csv,
             lambda: read_data(files.nulls_csv), with_nulls, "loadtxt, nan"),
            ("tenflang parse_data, brace text", files.brace,
             lambda: parse_data(brace_text, "data.txt"), files.values, "loadtxt"),
        ]
        data_bytes = files.values.nbytes
        times = {name: math.inf for name, *_ in readers}
        with one_thread():
            # round by round, every reader once a round: a machine that gets busier or
            # quieter meanwhile touches every contender alike
            for _ in range(args.repeat):
                for name, _, fn, expected, _ in readers:
                    t, got = timed(fn)
                    if not np.array_equal(as_matrix(got), expected, equal_nan=True):
                        raise SystemExit(f"{name} read different numbers")
                    times[name] = min(times[name], t)
                    del got
            rows = []
            for name, path, fn, _, contender in readers:
                base = times["numpy.loadtxt" if contender == "loadtxt"
                             else "numpy.loadtxt, nan cells"]
                rows.append([name, f"{path.stat().st_size / 1e6:.0f} MB", seconds(times[name]),
                             f"{times[name] / base:.2f}",
                             f"{peak_memory(fn) / data_bytes:.2f}"])
    print(f"bench_datafiles: {args.rows:,} records of x [4] and y (float64 data "
          f"{data_bytes / 1e6:.0f} MB), best of {args.repeat}; {machine()}")
    print(table(rows, ["reader", "file", "time", "time / loadtxt", "peak memory / data"]))
    print("(every reader gave loadtxt's numbers, bit for bit)\n")
    csv_ratio = times["tenflang read_data, CSV"] / times["numpy.loadtxt"]
    brace_ratio = times["tenflang read_data, brace"] / times["numpy.loadtxt"]
    memory_ratio = max(float(r[4]) for r in rows[1:])
    for what, ratio, target in (("CSV / numpy.loadtxt", csv_ratio, 1.5),
                                ("brace / numpy.loadtxt", brace_ratio, 3.0),
                                ("peak memory / float64 data (tenflang, worst)", memory_ratio,
                                 3.0)):
        print(f"{what} = {ratio:.2f} (target <= {target}): "
              f"{'met' if ratio <= target else 'MISSED'}")


if __name__ == "__main__":
    main()
