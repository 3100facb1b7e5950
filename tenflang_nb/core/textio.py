"""Reading text files strictly and writing output files atomically."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import TenFlangError

MAX_LINE_LENGTH = 10_000


def decode(data: bytes, file: str) -> str:
    """Decode UTF-8, naming the line of the first bad byte; CRLF becomes LF.

    >>> decode(b"declare input x\\r\\n", "a.tf")
    'declare input x\\n'
    >>> try:
    ...     decode(b"ok\\n\\xff", "a.tf")
    ... except TenFlangError as err:
    ...     print(str(err).splitlines()[0])
    a.tf: line 2: error: not UTF-8 text (byte 0xff at column 1)
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        start = data.rfind(b"\n", 0, exc.start) + 1
        end = data.find(b"\n", exc.start)
        col = exc.start - start
        # show the line (bad bytes replaced) with a caret under the first bad byte
        source = data[start:end if end >= 0 else len(data)].decode("utf-8", "replace")
        column = len(data[start:exc.start].decode("utf-8", "replace"))
        raise TenFlangError.at(
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at column {col + 1})",
            file=file, line=line, column=column, length=1, source=source.rstrip("\r"),
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def split_lines(text: str, file: str, max_length: int | None = MAX_LINE_LENGTH) -> list[str]:
    """Split into lines, rejecting overlong ones (a sign of a binary or minified file).

    Data files pass ``max_length=None``: one line may hold a whole weight matrix.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if max_length is None:
        return lines
    for number, line in enumerate(lines, 1):
        if len(line) > max_length:
            raise TenFlangError.at(
                f"line is {len(line)} characters long (at most {max_length} allowed)",
                file=file, line=number, source=line[:80],
            )
    return lines


def read_text(path: str | os.PathLike[str]) -> str:
    """Read a UTF-8 text file, turning OS errors into a clear :class:`TenFlangError`."""
    name = os.fspath(path)
    try:
        data = Path(name).read_bytes()
    except FileNotFoundError:
        raise TenFlangError.at("no such file", file=name) from None
    except IsADirectoryError:
        raise TenFlangError.at("is a directory, not a file", file=name) from None
    except OSError as exc:
        raise TenFlangError.at(f"cannot read: {exc.strerror}", file=name) from None
    return decode(data, name)


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename.

    A failure at any point leaves the previous file (or no file) in place, never half a file.
    """
    target = Path(os.fspath(path))
    directory = target.parent if str(target.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise TenFlangError.at(f"cannot write: {exc.strerror}", file=str(target)) from None
    try:
        # mkstemp makes the file private (0600); give it the mode a plain open() would
        try:
            mode = os.stat(target).st_mode & 0o777
        except OSError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise TenFlangError.at(f"cannot write: {exc.strerror}", file=str(target)) from None
        raise
