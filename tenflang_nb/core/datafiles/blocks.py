"""Text in blocks of whole lines, for the readers' fast paths: a string's or a file's (streamed
and decoded as read_text would decode it whole), a data file's text from its head (its first
significant line) on as every text format's reader takes it (``_Source``), and the numbers
of the lines in a block."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator

import numpy as np

from ..errors import TenFlangError
from ..textio import decode, read_bytes

# The fast paths read text in blocks of about this many characters (whole lines), so that
# the Python objects made for one block stay small whatever the size of the file.
_BLOCK_CHARS = 1 << 18


def _count_lines(text: str) -> int:
    """The lines of normalized text (a final newline ends the last line, it starts none)."""
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def _text_blocks(text: str) -> Iterator[tuple[int, str]]:
    """Normalized text as (number of the first line, whole lines without the last line's
    newline), about ``_BLOCK_CHARS`` at a time."""
    pos, lineno, n = 0, 1, len(text)
    while pos < n:
        end = text.find("\n", pos + _BLOCK_CHARS) if pos + _BLOCK_CHARS < n else -1
        if end < 0:
            end = n - 1 if text.endswith("\n") else n
        block = text[pos:end]
        yield lineno, block
        lineno += block.count("\n") + 1
        pos = end + 1


def _byte_blocks(path: str) -> Iterator[bytes]:
    """A file's bytes about ``_BLOCK_CHARS`` at a time, each block ending after a b"\\n"
    (but the last), so that each decodes on its own and no CR LF pair is cut in two."""
    try:
        handle = open(path, "rb")  # closed by the with below
    except (OSError, ValueError):  # ValueError: a NUL in the name
        read_bytes(path)  # raises the same clear error as every other reader
        raise
    with handle:
        pending: list[bytes] = []  # the start of a line longer than a block
        while True:
            try:
                data = handle.read(_BLOCK_CHARS)
            except OSError as exc:
                raise TenFlangError.at(f"cannot read: {exc.strerror}", file=path) from None
            if not data:
                break
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                pending.append(data)
                continue
            yield b"".join([*pending, data[:cut]])
            pending = [data[cut:]] if cut < len(data) else []
        if pending:
            yield b"".join(pending)


def _decode_block(data: bytes, first: bool, lineno: int, path: str) -> str:
    """A block of a file's bytes as read_text decodes the file (its own decode: UTF-8, BOM,
    CR LF); ``lineno`` is the block's first line, for the line of a bad byte."""
    # a later block is decoded after a newline: only the file's first bytes can be a BOM
    shift = lineno - 1 if first else lineno - 2
    try:
        return decode(data, path) if first else decode(b"\n" + data, path)[1:]
    except TenFlangError as err:
        raise TenFlangError([dataclasses.replace(d, line=d.line + shift) if d.line else d
                             for d in err.diagnostics]) from None


def _file_blocks(path: str) -> Iterator[tuple[int, str]]:
    """A file's text as :func:`_text_blocks` gives the text read_text returns, streamed."""
    lineno = 1
    for k, data in enumerate(_byte_blocks(path)):
        text = _decode_block(data, k == 0, lineno, path)
        if text.endswith("\n"):
            text = text[:-1]
        yield lineno, text
        lineno += text.count("\n") + 1


def _file_lines(path: str) -> int:
    """The lines of a file's text (LF, CR LF and a lone CR end a line); like read_text, it
    fails first of all on bytes that are not UTF-8, wherever they are (before any error
    about what the text says)."""
    lines, last = 0, b""
    for k, data in enumerate(_byte_blocks(path)):
        if not data.isascii():
            _decode_block(data, k == 0, lines + 1, path)  # only to find a bad byte
        lines += data.count(b"\n")
        if b"\r" in data:
            lines += data.count(b"\r") - data.count(b"\r\n")
        last = data[-1:]
    return lines + (0 if last in (b"", b"\n", b"\r") else 1)


class _Source:
    """A data file's text from its head (its first significant line: a CSV header, a first
    record) on, as blocks of lines: what a text format's reader reads. ``lines`` is how many
    lines the text has from the head on, the most records a reader can find."""

    def __init__(self, head: tuple[int, str], rest: tuple[int, str],
                 blocks: Iterator[tuple[int, str]], lines: int) -> None:
        self.head = head
        self.lines = lines
        self._rest = rest  # the head's block from the head on
        self._blocks = blocks  # the blocks after it

    @classmethod
    def find(cls, blocks: Iterator[tuple[int, str]], lines: int) -> _Source | None:
        """The text of ``blocks`` (of ``lines`` lines) from its head on; None when every
        line is blank or a comment."""
        for first, block in blocks:
            pos, lineno = 0, first
            while True:
                end = block.find("\n", pos)
                line = block[pos:] if end < 0 else block[pos:end]
                if (start := line.lstrip()) and start[0] != "#":
                    return cls((lineno, line), (lineno, block[pos:]), blocks,
                               lines - lineno + 1)
                if end < 0:
                    break
                pos, lineno = end + 1, lineno + 1
        return None

    def from_head(self) -> Iterator[tuple[int, str]]:
        yield self._rest
        yield from self._blocks

    def after_head(self) -> Iterator[tuple[int, str]]:
        lineno, block = self._rest
        end = block.find("\n")
        if end >= 0:
            yield lineno + 1, block[end + 1:]
        yield from self._blocks

    def significant(self) -> list[tuple[int, str]]:
        """Every line from the head on that is neither blank nor a comment, at once."""
        return [self.head, *itertools.chain.from_iterable(
            _significant(block, first) for first, block in self.after_head())]


def _significant(block: str, lineno: int) -> list[tuple[int, str]]:
    """The (number, text) of the lines of ``block`` that are neither blank nor comments."""
    return [(lineno + k, line) for k, line in enumerate(block.split("\n"))
            if (start := line.lstrip()) and start[0] != "#"]


def _plain(block: str) -> bool:
    """A block the fast paths may try: no comment in it. (A blank line, and anything else
    the fast paths do not expect, makes them give up on the block by itself.)"""
    return bool(block) and "#" not in block


def _block_line(block: str, first: int, k: int) -> tuple[int, str]:
    """The number and text of the k-th line of a block without blank or comment lines (only
    wanted for an error message)."""
    return first + k, block.split("\n")[k]


def _line_numbers(first: int, n: int) -> np.ndarray:
    return np.arange(first, first + n, dtype=np.int64)
