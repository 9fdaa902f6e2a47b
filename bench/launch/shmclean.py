"""Shared-memory files a killed job leaves in ``/dev/shm`` (why: docs/failures.md): listed before
the job (:func:`snapshot`), noted while its processes hold them (:func:`held_by`), and removed
after it when new, this user's, regular and unused (:func:`remove_orphans`)."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

SHM = Path("/dev/shm")
Entry = tuple[str, int]  # (path, inode) of a file in SHM
_DELETED = " (deleted)"


def snapshot(shm: Path = SHM) -> frozenset[Entry]:
    """The files in ``shm`` now, with their inodes (empty when there is no such directory)."""
    out: set[Entry] = set()
    with contextlib.suppress(OSError), os.scandir(shm) as it:
        for e in it:
            with contextlib.suppress(OSError):
                out.add((e.path, e.inode()))
    return frozenset(out)


def _maps(pid: int, prefix: str) -> Iterator[Entry]:
    try:
        text = Path(f"/proc/{pid}/maps").read_text()
    except (OSError, ValueError):
        return
    for line in text.splitlines():
        parts = line.split(maxsplit=5)  # address perms offset dev inode path
        if len(parts) == 6 and parts[5].startswith(prefix) and not parts[5].endswith(_DELETED):
            yield parts[5], int(parts[4])


def _fds(pid: int, prefix: str) -> Iterator[Entry]:
    fd_dir = f"/proc/{pid}/fd"
    try:
        fds = os.listdir(fd_dir)
    except OSError:
        return
    for fd in fds:
        try:
            target = os.readlink(f"{fd_dir}/{fd}")
            if target.startswith(prefix) and not target.endswith(_DELETED):
                yield target, os.stat(f"{fd_dir}/{fd}").st_ino
        except OSError:
            continue


def held_by(pids: Iterable[int], shm: Path = SHM) -> set[Entry]:
    """The files in ``shm`` that the processes ``pids`` map or hold open."""
    prefix = f"{shm}/"
    out: set[Entry] = set()
    for pid in pids:
        out.update(_maps(pid, prefix))
        out.update(_fds(pid, prefix))
    return out


def _ours(path: str, inode: int) -> bool:
    """Still there, the same file, this user's, and a regular file."""
    try:
        st = os.lstat(path)
    except OSError:
        return False  # gone already (its ranks finalized after all)
    return st.st_ino == inode and st.st_uid == os.geteuid() and stat.S_ISREG(st.st_mode)


def remove_orphans(held: Iterable[Entry], before: frozenset[Entry], shm: Path = SHM) -> list[str]:
    """Remove the files of ``held`` that are new since ``before``, still there, this user's,
    regular, and used by no live process; the paths removed."""
    new = sorted(e for e in set(held) if e not in before and _ours(*e))
    if not new:
        return []
    every = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    busy = {path for path, _ in held_by(every, shm)}  # what some live process may read
    removed = []
    for path, inode in new:
        if path in busy or not _ours(path, inode):
            continue
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
            removed.append(path)
    return removed
