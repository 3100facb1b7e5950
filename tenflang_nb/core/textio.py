"""Reading files strictly and writing output files atomically, never onto a file the shell's
``>`` would refuse or onto a file the same command reads."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from .errors import TenFlangError, printable
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
    except ValueError:  # the OS takes no file name with a NUL character in it
        raise TenFlangError.at("no such file (a file name has no NUL character)",
                               file=name) from None


def read_text(path: str | os.PathLike[str]) -> str:
    """Read a UTF-8 text file (normalized: no BOM, LF line ends)."""
    return decode(read_bytes(path), os.fspath(path))


def read_only(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is an existing regular file that an output must not replace.

    The shell's ``>`` refuses a file its user may not write (``os.access``: the mode bits,
    ACLs, a read-only file system); the rename an atomic write ends with would not, since it
    needs only the directory. For root, ``>`` writes anyway: here a file with no write bit
    for anyone (``chmod a-w``) is refused for root as well, since someone made it read-only
    on purpose (a teacher's data, a student's only copy); ``chmod u+w`` first to replace it.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "data.txt"
    >>> _ = path.write_text("x 1\\n")
    >>> read_only(path), path.chmod(0o444), read_only(path)
    (False, None, True)
    """
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # no such file (ValueError: a NUL in the name)
        return False
    if not stat.S_ISREG(mode):
        return False  # a device or a pipe is opened as it is; open() decides
    return not (mode & 0o222) or not os.access(path, os.W_OK)


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether two names are one regular file (also through symbolic or hard links).

    Devices and pipes are never "the same": ``/dev/stdin`` and ``/dev/stdout`` may be one
    terminal, and reading one while writing the other is what they are for.
    """
    try:
        sa, sb = os.stat(a), os.stat(b)
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(sa.st_mode) and (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def output_problem(path: str, reads: Mapping[str, str | None] | None = None) -> str | None:
    """Why a command may not write its output to ``path`` (checked before it runs, not after:
    a refused output must cost nothing and destroy nothing), or None. ``reads`` names the
    files the command reads (``{"SHAPE.tf": "shape.tf"}``): the output may be none of them.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "shape.tf"
    >>> _ = path.write_text("declare input x\\n")
    >>> output_problem(str(path), {"SHAPE.tf": str(path)}).endswith(
    ...     "shape.tf is the input SHAPE.tf: write the output to another file")
    True
    """
    shown = printable(path)
    if "\0" in path:
        return f"cannot write {shown}: a file name has no NUL character"
    for role, name in (reads or {}).items():
        if name is not None and same_file(path, name):
            also = "" if os.path.abspath(path) == os.path.abspath(name) else (
                f" ({printable(name)}, through a link)")
            return f"{shown} is the input {role}{also}: write the output to another file"
    if os.path.isdir(path):
        return f"{shown} is a directory"
    directory = os.path.dirname(os.path.realpath(path)) or "."
    if not os.path.isdir(directory):
        return f"cannot write {shown}: no such directory: {printable(os.path.dirname(path))}"
    if read_only(path):
        return f"cannot write {shown}: {_READ_ONLY} ({_READ_ONLY_HINT})"
    if not os.path.exists(path) and not os.access(directory, os.W_OK | os.X_OK):
        return f"cannot write {shown}: permission denied"
    return None


_READ_ONLY = "the file is read-only"
_READ_ONLY_HINT = "make it writable first (chmod u+w), or write to another file"


class OutputFile:
    """A file written whole or not at all (``with OutputFile(path) as out: out.write(...)``).

    A regular file (or a new one) is written to a temporary file beside it and renamed over
    it at the end, so a failure at any point leaves the previous file (or none), never half a
    file; it keeps the file's mode (a new one gets what a plain ``open`` would give), and it
    refuses a file that is read-only (:func:`read_only`), as the shell's ``>`` does. A
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
        if "\0" in self.name:  # the OS would raise a ValueError
            raise TenFlangError.at("cannot write: a file name has no NUL character",
                                   file=self.name)
        # binary: bytes as they are (an .npz); otherwise UTF-8 text with \n line ends
        options: dict[str, Any] = ({"mode": "wb"} if binary else
                                   {"mode": "w", "encoding": "utf-8", "newline": "\n"})
        # a device or a pipe (also behind a link: /dev/stdout) is opened as it is named
        self._direct = os.path.exists(self.name) and not os.path.isfile(self.name)
        target = Path(self.name if self._direct else os.path.realpath(self.name))
        self._target = target
        self._tmp: str | None = None
        if not self._direct and read_only(target):
            raise TenFlangError.at(f"cannot write: {_READ_ONLY}", file=self.name,
                                   hint=_READ_ONLY_HINT)
        try:
            if self._direct:
                self._handle: IO[Any] = open(target, **options)
            else:
                fd, self._tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                                 dir=target.parent)
                os.chmod(self._tmp, self._mode(target))
                self._handle = os.fdopen(fd, **options)
        except OSError as exc:
            self._forget_tmp()
            raise self._error(exc) from None
        except BaseException:  # Ctrl-C or a signal (cli.py) while it opened: no file left
            self._forget_tmp()
            raise

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
        self._forget_tmp()

    def _forget_tmp(self) -> None:
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
