"""Where numba keeps the fused engine's compiled loops (``core/fusedvm.py``, ``cache=True``).

numba caches a module's loops in the ``__pycache__`` beside it when it can write there, else in
a per-user folder; when it can write neither (a system-wide or image install run by a user who
cannot write the package's folder, with no writable home: the usual JupyterHub image) it
refuses to compile them at all, and a cache filled there by an administrator is never read
(numba reads only a folder it can also write). :func:`choose` decides, before ``fusedvm`` is
imported:

1. ``NUMBA_CACHE_DIR`` when it is set and writable (numba's own setting);
2. the package's own ``__pycache__`` when this process can write it (numba's default: a user's
   or a developer's install, and an administrator filling it with
   ``python -m tenflang_nb.core.fused --fill-cache``, say when an image is built);
3. else a folder this user can write: ``$XDG_CACHE_HOME/tenflang_nb``
   (``~/.cache/tenflang_nb``), else a private folder in the temporary directory.

A folder other than the package's is seeded with a copy of the package's filled cache when that
is newer than what it holds (a few MB, copied in milliseconds: no compile). Where no folder is
writable, there is no cache: the loops are compiled in memory by every process that uses them.
The temporary folder is taken only when this user owns it and nobody else can write it: numba's
cache files are pickles (loading one runs code), and a folder in the shared temporary directory
could have been made by someone else.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Cache", "choose", "filled", "using"]

SOURCE = Path(__file__).with_name("fusedvm.py")  # the one file of cached loops
SHIPPED = SOURCE.parent / "__pycache__"  # where numba puts them when it can write there
_FILES = f"{SOURCE.stem}.*.nb[ic]"  # numba's index (.nbi) and data (.nbc) files of that module


@dataclass(frozen=True)
class Cache:
    """numba's cache folder setting for the loops (``None``: its default, the package's
    ``__pycache__``), or no cache at all (``enabled`` false), and why, for ``status``."""

    enabled: bool
    folder: str | None
    why: str


def _writable(folder: Path) -> bool:
    """Whether this process can create files in ``folder`` (made if missing), as numba tests
    it (``os.access`` answers yes to root on a read-only file system)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError:
        return False
    return True


def _private(folder: Path) -> bool:
    """Whether ``folder`` is this user's own (made with mode 0700 if missing) and nobody
    else can write it: never load pickles another user could have put there."""
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = folder.lstat()
    except OSError:
        return False
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
            and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def _candidates() -> Iterator[tuple[Path | None, str]]:
    """Folders for the cache, best first, each with how it was found (``None``: the
    package's ``__pycache__``, numba's default)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        yield Path(os.environ["NUMBA_CACHE_DIR"]), "NUMBA_CACHE_DIR"
    yield None, "the package's folder"
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if os.path.isabs(home):
        yield Path(home) / "tenflang_nb", "the user's cache folder"
    try:
        temporary = Path(tempfile.gettempdir()) / f"tenflang_nb-numba-{os.getuid()}"
    except OSError:  # no writable temporary folder at all
        return
    if _private(temporary):
        yield temporary, "a private temporary folder"


@functools.cache
def choose() -> Cache:
    """Where the loops are cached in this process (see the module; decided once)."""
    passed = ""  # why the package's own folder was not taken
    for folder, how in _candidates():
        if folder is None:
            if _writable(SHIPPED):
                return Cache(True, None, f"numba's cache in {SHIPPED}")
            passed = f"; {SHIPPED} is read-only"
        elif _writable(folder):
            _seed(folder)
            return Cache(True, str(folder), f"numba's cache in {folder} ({how}{passed})")
    return Cache(False, None, f"no writable folder for numba's cache ({SHIPPED} is read-only, "
                              "and so are the user's cache folder and the temporary folder): "
                              "the loops are compiled in memory")


def filled() -> bool:
    """Whether the cache this process would use holds the loops (an index numba wrote, for
    some CPU): loading them then takes about a second, not a compile of 10-60 s."""
    cache = choose()
    if not cache.enabled:
        return False
    folder = SHIPPED if cache.folder is None else _subfolder(Path(cache.folder))
    return any(folder.glob(f"{SOURCE.stem}.*.nbi"))


def _subfolder(folder: Path) -> Path:
    """Where numba looks for the loops' files under a ``NUMBA_CACHE_DIR`` of ``folder``."""
    from numba.core.caching import _CacheLocator

    return folder / _CacheLocator.get_suitable_cache_subpath(str(SOURCE))


def _seed(folder: Path) -> None:
    """Copy the package's filled cache into ``folder`` when it has one newer than the copy
    there (an index and its data files together; never half a set)."""
    shipped = sorted(SHIPPED.glob(_FILES))
    index = [p for p in shipped if p.suffix == ".nbi"]
    if not index:
        return
    target = _subfolder(folder)
    newest = max(p.stat().st_mtime for p in index)
    held = list(target.glob(f"{SOURCE.stem}.*.nbi")) if target.is_dir() else []
    if held and max(p.stat().st_mtime for p in held) >= newest:
        return  # already seeded, or compiled here since (for this CPU, say)
    try:
        target.mkdir(parents=True, exist_ok=True)
        for old in target.glob(_FILES):
            old.unlink()
        # data files before the indexes that name them; each by rename, whole or not at all
        for source in sorted(shipped, key=lambda p: p.suffix == ".nbi"):
            part = target / f".{source.name}.{os.getpid()}"
            shutil.copy2(source, part)
            os.replace(part, target / source.name)
    except OSError:
        pass  # then numba compiles into the folder: slower, still right


@contextlib.contextmanager
def using(cache: Cache) -> Iterator[None]:
    """numba's cache folder set to ``cache``'s while the loops are decorated (numba picks a
    function's cache folder then), as it was afterwards (numba's other users keep theirs)."""
    from numba.core import config

    before = config.CACHE_DIR
    config.CACHE_DIR = cache.folder or ""  # "": numba's default, the package's __pycache__
    try:
        yield
    finally:
        config.CACHE_DIR = before
