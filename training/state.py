"""The derived-memory state a Writer builds, as plain dicts: what rewards and evals compare.

A :class:`WriterState` holds every derived record ever written (``entries``, keyed by
``entry_id``) and the UPDATE edges ``(old_id, new_id)``. The *heads* are the entries not
superseded by a later UPDATE: the current state of each matter. It mirrors the teacher
format of ``socialmem/teacher/*.json`` (``final_state``: ``entries``, ``heads``,
``update_edges``, ``roster``) and can be rebuilt from our own store's records.

An UPDATE keeps the old entry (non-destructive) and copies its owner, source, layer and
utype to the new one, as the Writer contract says (the source is the action's when it names
one: another person's validated correction).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

#: Fields every state record carries (others, such as ``from_ids``, ride along).
RECORD_FIELDS = ("entry_id", "owner", "source", "layer", "utype", "content")


@dataclass
class WriterState:
    """Derived records plus update edges.

    ``entries`` maps ``entry_id`` to a record dict with at least :data:`RECORD_FIELDS`,
    ``position`` (the writing position that created it) and ``superseded_by`` ("" while
    it is a head). ``edges`` lists ``(old_id, new_id)`` pairs in write order. ``roster``
    is the group's speakers.
    """

    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    edges: list[tuple[str, str]] = field(default_factory=list)
    roster: tuple[str, ...] = ()

    # ----------------------------------------------------------------- views
    def heads(self) -> list[dict[str, Any]]:
        """Current records (not superseded), in write order."""
        return [e for e in self.entries.values() if not e.get("superseded_by")]

    def edge_records(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """UPDATE edges as ``(old record, new record)`` pairs (what the chain reward reads)."""
        return [
            (self.entries[o], self.entries[n])
            for o, n in self.edges
            if o in self.entries and n in self.entries
        ]

    def copy(self) -> WriterState:
        return WriterState(copy.deepcopy(self.entries), list(self.edges), self.roster)

    # ----------------------------------------------------------------- writes
    def apply(
        self,
        actions: Iterable[dict[str, Any]],
        position: int,
        ids: Iterable[str] | None = None,
        ts: Any = None,
    ) -> list[str]:
        """Apply *already validated* ADD / UPDATE actions; NOOPs are skipped.

        Parameters
        ----------
        actions : action dicts in the Writer contract (``ADD`` with owner/source/layer/
            utype/content, ``UPDATE`` with entry_id/content, ``NOOP``).
        position : the writing position (segment index) doing the write.
        ids : the ids to give the new entries, one per ADD/UPDATE in order (the teacher
            format's ``created_ids``); by default ``e<position>_<n>``.
        ts : the segment's time, kept as ``valid_at`` on new entries (shown in prompts).

        Returns
        -------
        list[str]
            The ids created, in action order.

        Raises
        ------
        KeyError
            An UPDATE names an ``entry_id`` that is not a current head (validate first).
        """
        id_iter = iter(ids) if ids is not None else None
        created: list[str] = []
        for action in actions:
            kind = str(action.get("action", "")).upper()
            if kind not in ("ADD", "UPDATE"):
                continue
            new_id = next(id_iter) if id_iter is not None else f"e{position}_{len(self.entries)}"
            if kind == "ADD":
                rec = {k: action.get(k, "") for k in RECORD_FIELDS}
            else:
                old_id = str(action.get("entry_id", ""))
                old = self.entries.get(old_id)
                if old is None or old.get("superseded_by"):
                    raise KeyError(
                        f"UPDATE at position {position}: entry_id {old_id!r} is not a "
                        "current head; validate actions before applying them"
                    )
                rec = {k: old[k] for k in RECORD_FIELDS}
                rec["content"] = action.get("content", "")
                if action.get("source"):  # another person's correction (validated)
                    rec["source"] = action["source"]
                old["superseded_by"] = new_id
                self.edges.append((old_id, new_id))
            rec.update(entry_id=new_id, position=position, superseded_by="", valid_at=ts or "")
            self.entries[new_id] = rec
            created.append(new_id)
        return created

    # ----------------------------------------------------------------- (de)serialise
    def to_json(self) -> dict[str, Any]:
        """A JSON-safe dict (times as text) that :meth:`from_json` reads back."""
        entries = {
            k: {f: (v.isoformat() if hasattr(v, "isoformat") else v) for f, v in e.items()}
            for k, e in self.entries.items()
        }
        edges = [list(e) for e in self.edges]
        return {"entries": entries, "edges": edges, "roster": list(self.roster)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WriterState:
        """The state :meth:`to_json` wrote."""
        return cls(
            {k: dict(v) for k, v in data["entries"].items()},
            [(o, n) for o, n in data["edges"]],
            tuple(data["roster"]),
        )

    # ----------------------------------------------------------------- readers
    @classmethod
    def from_final_state(cls, final_state: dict[str, Any]) -> WriterState:
        """Build from a teacher ``final_state`` dict (``entries``, ``update_edges``, ``roster``)."""
        state = cls(roster=tuple(final_state.get("roster") or ()))
        for i, entry in enumerate(final_state.get("entries") or []):
            if "entry_id" not in entry:
                raise ValueError(
                    f"final_state.entries[{i}] has no entry_id; every teacher entry needs one"
                )
            rec = {k: entry.get(k, "") for k in RECORD_FIELDS}
            rec.update(
                position=entry.get("turn_created", 0),
                valid_at=entry.get("ts") or "",
                superseded_by=entry.get("superseded_by") or "",
            )
            state.entries[rec["entry_id"]] = rec
        state.edges = [(e["old"], e["new"]) for e in final_state.get("update_edges") or []]
        return state

    @classmethod
    def from_records(
        cls, records: Iterable[dict[str, Any]], roster: Iterable[str] = ()
    ) -> WriterState:
        """Build from our store's derived records (``KnowledgeItem`` rows as dicts).

        ``supersedes`` / ``superseded_by`` give the update edges; ``turn`` is kept as the
        position when present.
        """
        state = cls(roster=tuple(roster))
        rows = list(records)
        for row in sorted(rows, key=lambda r: r.get("write_order") or 0):
            rec = {k: row.get(k) or "" for k in RECORD_FIELDS}
            rec.update(
                position=row.get("turn") or 0,
                valid_at=row.get("valid_at") or "",
                superseded_by=row.get("superseded_by") or "",
            )
            state.entries[rec["entry_id"]] = rec
        for rec_id, rec in state.entries.items():
            if rec["superseded_by"] and rec["superseded_by"] in state.entries:
                state.edges.append((rec_id, rec["superseded_by"]))
        for row in rows:  # edges only named on the new side
            old = row.get("supersedes")
            if old and old in state.entries and (old, row["entry_id"]) not in state.edges:
                state.edges.append((old, row["entry_id"]))
                state.entries[old]["superseded_by"] = row["entry_id"]
        return state


def replay_teacher(teacher: dict[str, Any]) -> list[WriterState]:
    """States after each teacher transition (``M*_t`` of the paper), replayed from actions.

    ``teacher`` is a ``socialmem/teacher/*.json`` dict. Element ``t`` of the result is the
    state after writing position ``t``. The teacher's ``created_ids`` are reused, so UPDATE
    ``entry_id``s resolve and the final element equals ``final_state`` (checked in tests).
    """
    roster = tuple((teacher.get("final_state") or {}).get("roster") or ())
    state = WriterState(roster=roster)
    states: list[WriterState] = []
    for i, tr in enumerate(teacher.get("transitions") or []):
        try:
            state.apply(
                tr.get("actions") or [], position=i, ids=tr.get("created_ids"), ts=tr.get("ts")
            )
        except (KeyError, StopIteration) as exc:
            raise ValueError(
                f"{teacher.get('network_id')}: transitions[{i}] does not replay "
                f"({exc}); its created_ids must match its ADD/UPDATE actions"
            ) from exc
        states.append(state.copy())
    return states
