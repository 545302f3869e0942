"""The groups a :class:`~speakerflow.memory.Memory` holds open: one store per group with its
lock, least recently used idle groups closed past ``max_open``."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Self

from speakerflow.graphs import GroupStore, Home, check_group_id
from speakerflow.memory.functions import GroupNotFoundError
from speakerflow.memory.snapshot import ReadSnapshot


@dataclass
class _Group:
    store: GroupStore
    lock: threading.RLock = field(default_factory=threading.RLock)
    knowledge: tuple | None = None
    knowledge_at: int = -1
    closed: bool = False
    used: float = 0.0
    users: int = 0
    version: int = 0  # bumped by every change through this Memory
    snapshot: ReadSnapshot | None = None
    reader: Any = None  # a read-only Tantivy reader of the group's index (for snapshots)
    write_pending: bool = False  # a write is queued: reads may use the last snapshot meanwhile


class OpenGroups:
    """The open groups of one store home (the base of :class:`~speakerflow.memory.Memory`)."""

    def __init__(self, home: Home, read_only: bool, max_open: int):
        self.home = home
        self.read_only = read_only
        self.max_open = max_open
        self._groups: dict[str, _Group] = {}
        self._lock = threading.Lock()
        self._closed = False

    def close(self) -> None:
        """Close every open group (releasing its writer lock)."""
        with self._lock:
            groups, self._groups = list(self._groups.values()), {}
            self._closed = True
        for g in groups:
            with g.lock:
                g.closed = True
                g.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def groups(self) -> list[str]:
        """Ids of the groups with a store under this home."""
        return self.home.groups()

    def exists(self, group: str) -> bool:
        return group in self._groups or self.home.group_path(group).exists()

    def _group(self, group: str, create: bool = False) -> _Group:
        check_group_id(group)
        with self._lock:
            if self._closed:
                raise RuntimeError("this Memory is closed")
            g = self._groups.get(group)
            if g is None:
                if not create and not self.home.group_path(group).exists():
                    raise GroupNotFoundError(
                        f"group {group!r} has no store yet; add messages first"
                    )
                if create and self.read_only:
                    raise PermissionError(f"group {group!r}: this Memory is read-only")
                self._evict()
                g = self._groups[group] = _Group(self.home.open(group, writable=not self.read_only))
            g.used = time.monotonic()
            return g

    def _evict(self) -> None:
        """Close least recently used idle groups until one more fits (``self._lock`` held)."""
        for name, g in sorted(self._groups.items(), key=lambda kv: kv[1].used):
            if len(self._groups) < self.max_open:
                return
            if g.users == 0 and g.lock.acquire(blocking=False):  # a group in use stays open
                try:
                    g.closed = True
                    g.store.close()
                    del self._groups[name]
                finally:
                    g.lock.release()

    @contextmanager
    def _held(self, group: str, create: bool = False) -> Iterator[_Group]:
        """The group, open, with its lock held (reopened if it was closed meanwhile)."""
        while True:
            g = self._group(group, create)
            with g.lock:
                if not g.closed:
                    g.users += 1
                    try:
                        yield g
                    finally:
                        g.users -= 1
                    return

    @contextmanager
    def use(self, group: str, create: bool = False) -> Iterator[GroupStore]:
        """The group's open store, with the group's lock held (for your own operators)."""
        with self._held(group, create) as g:
            try:
                yield g.store
            finally:
                g.version += 1  # it may have been changed: the next read takes a new snapshot
