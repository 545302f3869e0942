"""The store home: the folder that holds every group's store (``<home>/groups/<id>/``)."""

from __future__ import annotations

from pathlib import Path

from speakerflow.settings import home_root

from .store import GroupStore
from .tables import GROUP_ID, check_group_id

#: Subfolder of the store home watched by the Dagster inbox sensor (``<home>/inbox``).
INBOX_DIRNAME = "inbox"


class Home:
    """The folder that holds every group's store.

    Resolved from the explicit ``root``, else ``$SPEAKERFLOW_HOME``, else ``./.speakerflow``.
    """

    def __init__(self, root: str | Path | None = None):
        self.root = home_root(root)

    def groups(self) -> list[str]:
        """Ids of the groups that have a store, sorted."""
        base = self.root / "groups"
        return (
            sorted(p.name for p in base.iterdir() if p.is_dir() and GROUP_ID.match(p.name))
            if base.exists()
            else []
        )

    def group_path(self, group_id: str) -> Path:
        return self.root / "groups" / check_group_id(group_id)

    def open(
        self, group_id: str, writable: bool = False, wait_s: float | None = None
    ) -> GroupStore:
        """Open a group's store; ``writable=True`` takes the group's single-writer lock,
        waiting up to ``wait_s`` seconds for another writer (default ``$SPEAKERFLOW_LOCK_WAIT``
        or 0) before :class:`GroupBusyError`. A writable open also creates ``<home>/inbox``,
        the folder the Dagster inbox sensor watches."""
        if writable:
            (self.root / INBOX_DIRNAME).mkdir(parents=True, exist_ok=True)
        return GroupStore(self.group_path(group_id), group_id, writable=writable, wait_s=wait_s)
