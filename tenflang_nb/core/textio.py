"""Reading files strictly and writing output files atomically."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import TenFlangError
from .lexical import normalize_text


def decode(data: bytes, file: str) -> str:
    """Decode UTF-8, naming the line of the first bad byte; then normalize (BOM, CRLF).

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
    return normalize_text(text)


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """A file's bytes, turning OS errors into a clear :class:`TenFlangError`."""
    name = os.fspath(path)
    try:
        return Path(name).read_bytes()
    except FileNotFoundError:
        raise TenFlangError.at("no such file", file=name) from None
    except IsADirectoryError:
        raise TenFlangError.at("is a directory, not a file", file=name) from None
    except OSError as exc:
        raise TenFlangError.at(f"cannot read: {exc.strerror}", file=name) from None


def read_text(path: str | os.PathLike[str]) -> str:
    """Read a UTF-8 text file (normalized: no BOM, LF line ends)."""
    return decode(read_bytes(path), os.fspath(path))


def write_atomic(path: str | os.PathLike[str], text: str | bytes) -> None:
    """Write ``text`` (or bytes, e.g. an .npz file) to ``path`` through a temporary file and
    a rename.

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
        if isinstance(text, bytes):
            with os.fdopen(fd, "wb") as binary:
                binary.write(text)
        else:
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
