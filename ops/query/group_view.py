"""Arrays over one group's messages (ids, speakers, texts, times, sessions, neighbours and
embeddings), built once per store and shared by every stage of the query path."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from speakerflow.ops.text.embed import Embedder
from speakerflow.ops.text.embed_cache import cached_embeddings


@dataclass
class GroupView:
    """Arrays over one group's messages, built once per store and reused by every query.

    ``pos`` maps msg_id -> row; ``prev``/``next`` give the neighbouring row in the same
    session (-1 at a session edge); ``session_of`` is a session number per row.
    """

    store: Any
    ids: list[str]
    speakers: list[str]
    texts: list[str]
    ts: list
    sessions: list[str]
    pos: dict[str, int]
    prev: np.ndarray
    next: np.ndarray
    session_of: np.ndarray
    embeddings: dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def of(cls, store) -> GroupView:
        """The cached view of ``store`` (rebuilt when the message count changed)."""
        msgs = store.messages()
        view = getattr(store, "_group_view", None)
        if view is not None and len(view.ids) == msgs.num_rows:
            return view
        cols = msgs.select(["msg_id", "speaker", "text", "ts", "session_id"]).to_pydict()
        ids, sessions = cols["msg_id"], cols["session_id"]
        n = len(ids)
        session_num: dict[str, int] = {}
        session_of = np.array(
            [session_num.setdefault(s, len(session_num)) for s in sessions], dtype=np.int64
        )
        prev = np.full(n, -1, dtype=np.int64)
        nxt = np.full(n, -1, dtype=np.int64)
        if n > 1:
            same = session_of[1:] == session_of[:-1]
            idx = np.arange(1, n)
            prev[1:][same] = idx[same] - 1
            nxt[:-1][same] = idx[same]
        view = cls(
            store,
            ids,
            cols["speaker"],
            cols["text"],
            cols["ts"],
            sessions,
            {m: i for i, m in enumerate(ids)},
            prev,
            nxt,
            session_of,
        )
        store._group_view = view
        return view

    def __len__(self) -> int:
        return len(self.ids)

    def dense_matrix(self, embedder: Embedder) -> np.ndarray:
        """Embeddings of ``"speaker: text"`` per message under ``embedder`` (from the group's
        cache)."""
        if embedder.name not in self.embeddings:
            # the speaker label goes into the embedded text: questions name people, and
            # "Ana: I prefer Lisbon" is what the message means in a multi-party chat
            labelled = [f"{s}: {t}" for s, t in zip(self.speakers, self.texts, strict=True)]
            self.embeddings[embedder.name] = cached_embeddings(
                self.store, embedder, self.ids, labelled, kind="messages-labelled"
            )
        return self.embeddings[embedder.name]

    def window_rows(self, row: int, width: int = 1) -> list[int]:
        """``row`` and up to ``width`` turns on each side in the same session, in time order."""
        left, right = [], []
        r = row
        for _ in range(width):
            r = int(self.prev[r]) if r >= 0 else -1
            if r >= 0:
                left.append(r)
        r = row
        for _ in range(width):
            r = int(self.next[r]) if r >= 0 else -1
            if r >= 0:
                right.append(r)
        return left[::-1] + [row] + right

    def window_matrix(self, embedder: Embedder, width: int = 1) -> np.ndarray:
        """Embeddings of each message's window (see the module doc), from the group's cache.

        A window's cache id names all its messages, so a window that gains a neighbour
        later (messages appended to its session) is encoded afresh.
        """
        key = f"{embedder.name}/window-{width}"
        if key not in self.embeddings:
            ids, texts = [], []
            for row in range(len(self)):
                rows = self.window_rows(row, width)
                ids.append("+".join(self.ids[r] for r in rows))
                texts.append("\n".join(f"{self.speakers[r]}: {self.texts[r]}" for r in rows))
            self.embeddings[key] = cached_embeddings(
                self.store, embedder, ids, texts, kind=f"windows-{width}"
            )
        return self.embeddings[key]

    def neighbours(self, row: int, width: int = 1) -> list[int]:
        """Rows within ``width`` turns of ``row`` in the same session, nearest first."""
        out: list[int] = []
        left = right = row
        for _ in range(width):
            left = int(self.prev[left]) if left >= 0 else -1
            right = int(self.next[right]) if right >= 0 else -1
            out.extend(r for r in (left, right) if r >= 0)
        return out
