"""The registry of data file formats: one :class:`DataFormat` entry a format, with its name,
one-line doc, file extensions, how a text in it is recognised by its first line, its reader
and its writer.

``read_data``, ``parse_data``, ``format_table``, ``output_format``, the commands' help and the
Guide's table of formats all read :data:`FORMATS`: adding a format is one entry here, plus its
reader (and writer) and tests.

>>> csv = FORMATS["csv"]
>>> csv.extensions, csv.binary, csv.write is not None
(('.csv',), False, True)
>>> [sniffed(head).name for head in ("{x: 1}", "x 1", "x\\tnull", "x,y", "x")]
['brace', 'original', 'original', 'csv', 'csv']
>>> by_extension("W.NPZ").name, by_extension("w.txt")
('npz', None)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..errors import TenFlangError
from .blocks import _Source
from .brace import _parse_brace, _sniff_brace
from .csvfiles import _parse_csv
from .original import _parse_original, _sniff_original
from .pyvalues import _read_npz
from .table import DataTable, Value
from .writers import _write_brace, _write_csv, _write_npz

Records = Sequence[Mapping[str, Value]]


@dataclass(frozen=True)
class DataFormat:
    """One data file format. A text format has ``parse`` (its text from the first significant
    line on, and the file's name); a binary format has ``read`` (the file's path) instead."""

    name: str
    doc: str  # one line of Markdown (the commands' help shows it without the backticks)
    extensions: tuple[str, ...] = ()  # a file so named is in this format (lower case)
    sniff: Callable[[str], bool] | None = None  # is a text with this first line in it?
    sniff_doc: str = ""  # what sniff looks for, after "a first line"
    parse: Callable[[_Source, str], DataTable] | None = None
    read: Callable[[str], DataTable] | None = None
    write: Callable[[Records, str], str | bytes] | None = None

    def __post_init__(self) -> None:
        if (self.parse is None) == (self.read is None):
            raise ValueError(f"data format {self.name!r}: give parse (text) or read (binary)")
        if (self.sniff is None) != (not self.sniff_doc) or (self.sniff and self.binary):
            raise ValueError(f"data format {self.name!r}: only a text format sniffs, with a "
                             "sniff_doc")

    @property
    def binary(self) -> bool:
        """Whether its files are bytes, not text (then only ``read_data`` reads them)."""
        return self.parse is None

    def recognised_by(self) -> str:
        """What makes a file read in this format when no format is named (Markdown).

        >>> FORMATS["csv"].recognised_by()
        'a name ending `.csv`, any other text'
        """
        ways = [f"a name ending `{ext}`" for ext in self.extensions]
        if self.sniff_doc:
            ways.append(f"a first line {self.sniff_doc}")
        if self.name == UNSNIFFED:
            ways.append("any other text")
        return ", ".join(ways) or "only its name"

    def written_to(self) -> str:
        """Where the commands' ``-o`` writes this format ("" where it is never written).

        >>> FORMATS["brace"].written_to(), FORMATS["original"].written_to()
        ('any other name, standard output', '')
        """
        if self.write is None:
            return ""
        ways = [f"a name ending `{ext}`" for ext in self.extensions]
        if self.name == DEFAULT_OUTPUT:
            ways.append("any other name, standard output")
        return ", ".join(ways) or "only by its name"


FORMATS: dict[str, DataFormat] = {f.name: f for f in [
    DataFormat("brace", "one record per line in braces: `{x: 3, W: [[1, 2], [3, 4]], y: null}`",
               sniff=_sniff_brace, sniff_doc="starting with `{`", parse=_parse_brace,
               write=_write_brace),
    DataFormat("csv", "a header of names, then one record per row; a tensor over columns "
               "`W[0][0],W[0][1],...`, an empty cell for null",
               extensions=(".csv",), parse=_parse_csv, write=_write_csv),
    DataFormat("original", "the 2016 original's `name value` lines (a tab or spaces), all "
               "one record", sniff=_sniff_original, sniff_doc="of a name and a number",
               parse=_parse_original),
    DataFormat("npz", "numpy's archive of named arrays (`numpy.savez`), the example on the "
               "first axis, NaN for null", extensions=(".npz",), read=_read_npz,
               write=_write_npz),
]}
# A text no sniffer claims is CSV (its header can look like anything); a file whose extension
# names no format with a writer, and standard output, get brace notation.
UNSNIFFED = "csv"
DEFAULT_OUTPUT = "brace"


def lookup(name: str | None, file: str) -> DataFormat | None:
    """The format called ``name`` (None for None: find it from the file)."""
    if name is None:
        return None
    if not isinstance(name, str) or name not in FORMATS:  # (a list is no key: no TypeError)
        raise TenFlangError.at(
            f"unknown data file format {name!r} (expected one of {', '.join(FORMATS)})",
            file=file)
    return FORMATS[name]


def writer(name: str, file: str) -> Callable[[Records, str], str | bytes]:
    """The writer of the format called ``name``, or an error naming the ones that write."""
    fmt = FORMATS.get(name) if isinstance(name, str) else None
    if fmt is None or fmt.write is None:
        written = ", ".join(f.name for f in FORMATS.values() if f.write)
        raise TenFlangError.at(f"cannot write data as {name!r} (expected one of {written})",
                               file=file)
    return fmt.write


def by_extension(path: str | os.PathLike[str]) -> DataFormat | None:
    """The format a file's name promises, or None."""
    lowered = os.fspath(path).lower()
    return next((f for f in FORMATS.values() if lowered.endswith(f.extensions)), None)


def sniffed(head: str) -> DataFormat:
    """The format of a text whose first significant line is ``head``."""
    # Deciding on the first significant line alone gives the same answer as looking at every
    # line for any valid file (a CSV header never reads "name number"), and a broken
    # original-format file then gets an error about its broken line, not about a CSV header.
    return next((f for f in FORMATS.values() if f.sniff is not None and f.sniff(head)),
                FORMATS[UNSNIFFED])
