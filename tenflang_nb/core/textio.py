"""Reading files strictly and writing output files atomically."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import IO, Any

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


class OutputFile:
    """A file written whole or not at all (``with OutputFile(path) as out: out.write(...)``).

    A regular file (or a new one) is written to a temporary file beside it and renamed over
    it at the end, so a failure at any point leaves the previous file (or none), never half a
    file; it keeps the file's mode (a new one gets what a plain ``open`` would give). A
    symbolic link is written through: its target is replaced and the link stays. Anything
    else (``/dev/stdout``, ``/dev/null``, a FIFO) is written directly, as a shell redirection
    would.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "w.txt"
    >>> with OutputFile(path) as out:
    ...     out.write("{w: 1.0}\\n")
    >>> path.read_text()
    '{w: 1.0}\\n'
    """

    def __init__(self, path: str | os.PathLike[str], binary: bool = False) -> None:
        self.name = os.fspath(path)
        # binary: bytes as they are (an .npz); otherwise UTF-8 text with \n line ends
        options: dict[str, Any] = ({"mode": "wb"} if binary else
                                   {"mode": "w", "encoding": "utf-8", "newline": "\n"})
        # a device or a pipe (also behind a link: /dev/stdout) is opened as it is named
        self._direct = os.path.exists(self.name) and not os.path.isfile(self.name)
        target = Path(self.name if self._direct else os.path.realpath(self.name))
        self._target = target
        self._tmp: str | None = None
        try:
            if self._direct:
                self._handle: IO[Any] = open(target, **options)
            else:
                fd, self._tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                                 dir=target.parent)
                os.chmod(self._tmp, self._mode(target))
                self._handle = os.fdopen(fd, **options)
        except OSError as exc:
            raise self._error(exc) from None

    @staticmethod
    def _mode(target: Path) -> int:
        # mkstemp makes the file private (0600); give it the mode a plain open() would
        try:
            return os.stat(target).st_mode & 0o777
        except OSError:
            umask = os.umask(0)
            os.umask(umask)
            return 0o666 & ~umask

    def _error(self, exc: OSError) -> TenFlangError:
        return TenFlangError.at(f"cannot write: {exc.strerror}", file=self.name)

    def write(self, text: str | bytes) -> None:
        try:
            self._handle.write(text)
        except OSError as exc:
            self.discard()
            raise self._error(exc) from None

    def commit(self) -> None:
        """Close the file and put it in place."""
        try:
            self._handle.close()
            if self._tmp is not None:
                os.replace(self._tmp, self._target)
                self._tmp = None
        except OSError as exc:
            self.discard()
            raise self._error(exc) from None

    def discard(self) -> None:
        """Close and forget what was written (the previous file, if any, stays)."""
        self._handle.close()
        if self._tmp is not None:
            try:
                os.unlink(self._tmp)
            except OSError:
                pass
            self._tmp = None

    def __enter__(self) -> OutputFile:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            self.commit()
        else:
            self.discard()


def write_atomic(path: str | os.PathLike[str], text: str | bytes) -> None:
    """Write ``text`` (or bytes: an .npz file) to ``path`` whole or not at all (see
    :class:`OutputFile`)."""
    with OutputFile(path, binary=isinstance(text, bytes)) as out:
        out.write(text)
