"""Forget: remove messages (a person's, some ids, or all) from every copy of a group's store.

:func:`forget` plans the deletion, writes it as a batch manifest (``batch.json``, kind
``forget``), then applies it store by store; every step is idempotent, so a process killed
half way is finished by the next writable open (:meth:`GroupStore.recover` calls
:func:`recover_forget`). What is removed:

* the messages: Parquet parts rewritten without them, Kuzu ``Message`` nodes (and their
  ``FROM_MSG``/``REPLY_TO``/``MENTIONS`` rels), Tantivy documents, embedding-cache rows;
* derived records whose evidence was only those messages, records sourced by a forgotten
  person (what they said), and records carrying a phrase (5 words) found only in
  forgotten messages (a quote); records with other evidence keep it, trimmed to what
  remains. Records other people's messages state about a forgotten person stay (they
  rest on those people's messages, which stay too). Remaining messages that lost a
  record leave the writer watermark (``rederive``), so the Writer derives them again
  (:func:`speakerflow.pipelines.forget.forget_group` does it at once);
  update chains are re-linked around deleted states;
* facts likewise (evidence only forgotten, about a forgotten person's entity, or quoting
  forgotten text); facts a deleted fact had invalidated become current again;
* the person from the roster and alias lists, the person's entities, the writer watermark
  and entity-path bookkeeping entries, and log lines naming deleted ids;
* then one line is appended to ``forget_log.jsonl``: time, mode, counts and a SHA-256 of
  the selector, never names or text.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from speakerflow.words import words as word_runs

from . import batch
from .batch import failpoint
from .forget_apply import ForgetReport, apply_forget
from .tables import StoreError

SHINGLE = 5


_FOLD = frozenset(
    "i me my mine you your yours we our ours he him his she her hers they them their".split()
)


def shingles(text: str, n: int = SHINGLE, names: frozenset[str] = frozenset()) -> set[str]:
    """Word n-grams of lower-cased ``text`` (a text of 3 to ``n`` words is one shingle).

    Pronouns and the group's names fold into one token and a possessive ``s`` is dropped,
    so a Writer's rewording of a quote ("is this your own painting" -> "is this Mel's own
    painting") still matches the message it came from.
    """
    words = ["_" if w in _FOLD or w in names else w for w in word_runs(text or "") if w != "s"]
    if len(words) < n:
        return {" ".join(words)} if len(words) >= 3 else set()
    return {" ".join(words[i : i + n]) for i in range(len(words) - n + 1)}


def _selector_hash(group_id: str, mode: str, value: Any) -> str:
    return hashlib.sha256(json.dumps([group_id, mode, value], sort_keys=True).encode()).hexdigest()


def plan_forget(
    store: Any,
    speaker: str | None = None,
    message_ids: list[str] | None = None,
    everything: bool = False,
    rewrite_records: bool = False,
) -> dict[str, Any]:
    """The forget batch (manifest) for one selector: exactly one of ``speaker``,
    ``message_ids`` or ``everything``. Raises :class:`~speakerflow.graphs.StoreError` for a
    speaker or message id the group does not have. ``rewrite_records``: every record is
    deleted and every remaining message leaves the writer watermark, so the Writer derives
    the group's records again from what remains (what a group that never had the messages
    would hold), instead of the cascade."""
    if sum(bool(x) for x in (speaker, message_ids, everything)) != 1:
        raise StoreError("forget needs exactly one of: a speaker, message ids, or everything")
    msgs = store.messages().select(["msg_id", "speaker", "text"]).to_pylist()
    mode = "all" if everything else "speaker" if speaker else "messages"
    targets, roster_remove, person_names = _selected(store, msgs, speaker, message_ids)
    quotes = _quoting(store, msgs, targets)
    recs = store.records().to_pylist()
    delete, trim = _records_hit(recs, targets, roster_remove, quotes, everything)
    by_id = {r["entry_id"]: r for r in recs}
    # messages that stay but lost a record (it quoted forgotten text, or its other evidence
    # was forgotten): they leave the writer watermark so the Writer derives them again
    rederive = sorted(
        {m for rid in delete for m in (by_id[rid]["from_ids"] or []) if m not in targets}
    )
    if rewrite_records and not everything:
        delete, trim = set(by_id), {}
        rederive = sorted({m["msg_id"] for m in msgs} - targets)
    facts = _facts_hit(store, targets, person_names, quotes, everything)
    return {
        "kind": "forget",
        "batch_id": uuid.uuid4().hex,
        "at": datetime.now(UTC).isoformat(),
        "mode": mode,
        "selector_sha256": _selector_hash(
            store.group_id, mode, speaker or sorted(message_ids or []) or "all"
        ),
        "msg_ids": sorted(targets),
        "roster_remove": roster_remove,
        "person_names": sorted(person_names),
        "new": [],  # readers hide nothing extra: forgotten ids are what they must stop seeing
        "hide": sorted(targets | delete),
        "delete_records": sorted(delete),
        "trim_records": trim,
        "relink": _relinks(recs, by_id, delete),
        **facts,
        "rederive": [] if everything else rederive,
    }


def _selected(
    store: Any, msgs: list[dict], speaker: str | None, message_ids: list[str] | None
) -> tuple[set[str], list[str], set[str]]:
    """(message ids forgotten, roster names removed, the person's names) of the selector."""
    if speaker:
        names = {speaker} | {n for n, al in store.aliases().items() if speaker in al}
        name = next((n for n in store.roster() if n in names), None)
        if name is None and not any(m["speaker"] == speaker for m in msgs):
            raise StoreError(
                f"group {store.group_id!r} has no speaker {speaker!r} (roster: {store.roster()})"
            )
        name = name or speaker
        targets = {m["msg_id"] for m in msgs if m["speaker"] == name}
        return targets, [name], {name, *store.aliases().get(name, [])}
    if message_ids:
        have = {m["msg_id"] for m in msgs}
        unknown = [m for m in message_ids if m not in have]
        if unknown:
            raise StoreError(
                f"group {store.group_id!r} has no message(s) {unknown[:5]}"
                f"{' ...' if len(unknown) > 5 else ''}; nothing was forgotten"
            )
        return set(message_ids), [], set()
    roster = list(store.roster())
    return {m["msg_id"] for m in msgs}, roster, set(roster)


def _quoting(store: Any, msgs: list[dict], targets: set[str]) -> Callable[[str | None], bool]:
    """Whether a text quotes a forgotten message: shares a shingle only forgotten messages
    have (names and pronouns folded, see :func:`shingles`)."""
    gone_sh: set[str] = set()
    kept_sh: set[str] = set()
    name_words = frozenset(
        w
        for n in [*store.roster(), *(a for al in store.aliases().values() for a in al)]
        for w in word_runs(n)
    )
    for m in msgs:
        (gone_sh if m["msg_id"] in targets else kept_sh).update(
            shingles(m["text"], names=name_words)
        )
    exclusive = gone_sh - kept_sh

    def quotes(text: str | None) -> bool:
        return bool(exclusive) and not shingles(text or "", names=name_words).isdisjoint(exclusive)

    return quotes


def _records_hit(
    recs: list[dict],
    targets: set[str],
    roster_remove: list[str],
    quotes: Callable[[str | None], bool],
    everything: bool,
) -> tuple[set[str], dict[str, list[str]]]:
    """Records deleted (all their evidence forgotten, sourced by a removed person, quoting
    forgotten text) and records trimmed (some evidence forgotten: what remains of it)."""
    delete: set[str] = set()
    trim: dict[str, list[str]] = {}
    for r in recs:
        ev = list(r["from_ids"] or [])
        hit = [m for m in ev if m in targets]
        if (
            everything
            or (ev and len(hit) == len(ev))
            or r["source"] in roster_remove
            or quotes(r["content"])
            or quotes(r["event"])
        ):
            delete.add(r["entry_id"])
        elif hit:
            trim[r["entry_id"]] = [m for m in ev if m not in targets]
    return delete, trim


def _relinks(recs: list[dict], by_id: dict[str, dict], delete: set[str]) -> dict[str, list[Any]]:
    """Kept records whose update chain ran through a deleted one: their new neighbours
    (supersedes, superseded_by, the new invalid_at)."""
    relink: dict[str, list[Any]] = {}
    for r in recs:
        if r["entry_id"] in delete:
            continue
        sup, sb = r["supersedes"], r["superseded_by"]
        while sup is not None and sup in delete:
            sup = by_id[sup]["supersedes"] if sup in by_id else None
        while sb is not None and sb in delete:
            sb = by_id[sb]["superseded_by"] if sb in by_id else None
        if (sup, sb) != (r["supersedes"], r["superseded_by"]):
            inv = by_id[sb]["valid_at"] if sb is not None and sb in by_id else None
            relink[r["entry_id"]] = [sup, sb, inv.isoformat() if inv is not None else None]
    return relink


def _facts_hit(
    store: Any,
    targets: set[str],
    person_names: set[str],
    quotes: Callable[[str | None], bool],
    everything: bool,
) -> dict[str, Any]:
    """What goes of the entity graph (on-disk stores that have one): facts deleted or
    trimmed, facts a deleted fact superseded (reset to current), the person's entities."""
    out: dict[str, Any] = {
        "delete_facts": [],
        "trim_facts": {},
        "reset_facts": [],
        "delete_entities": [],
    }
    if store.in_memory or not (Path(store.root) / "graph.kuzu").exists():
        return out
    g = store.graph
    ents = g.rows("MATCH (e:Entity) RETURN e.entity_id AS id, e.name AS name, e.aliases AS aliases")
    low = {n.lower() for n in person_names}
    del_ents = sorted(
        e["id"]
        for e in ents
        if everything
        or (e["name"] or "").lower() in low
        or any((a or "").lower() in low for a in e["aliases"] or [])
    )
    de = set(del_ents)
    del_facts: set[str] = set()
    trim_facts: dict[str, list[str]] = {}
    for f in g.rows(
        "MATCH (f:Fact) RETURN f.edge_id AS id, f.evidence_ids AS ev, f.description AS d, "
        "f.subject_id AS s, f.object_id AS o"
    ):
        ev = list(f["ev"] or [])
        hit = [m for m in ev if m in targets]
        if (
            everything
            or (ev and len(hit) == len(ev))
            or f["s"] in de
            or f["o"] in de
            or quotes(f["d"])
        ):
            del_facts.add(f["id"])
        elif hit:
            trim_facts[f["id"]] = [m for m in ev if m not in targets]
    superseders: dict[str, list[str]] = {}
    for r in g.rows("MATCH (a:Fact)-[:SUPERSEDES]->(b:Fact) RETURN a.edge_id AS a, b.edge_id AS b"):
        superseders.setdefault(r["b"], []).append(r["a"])
    out["reset_facts"] = sorted(
        b for b, al in superseders.items() if b not in del_facts and all(a in del_facts for a in al)
    )
    out.update(delete_facts=sorted(del_facts), trim_facts=trim_facts, delete_entities=del_ents)
    return out


def forget(
    store: Any,
    speaker: str | None = None,
    message_ids: list[str] | None = None,
    everything: bool = False,
    dry_run: bool = False,
    rewrite_records: bool = False,
) -> ForgetReport:
    """Forget a speaker, some messages, or everything in ``store`` (writable); see the module
    doc (``rewrite_records``: see :func:`plan_forget`)."""
    man = plan_forget(store, speaker, message_ids, everything, rewrite_records)
    report = ForgetReport(
        store.group_id,
        man["mode"],
        dry_run,
        messages=len(man["msg_ids"]),
        records_deleted=len(man["delete_records"]),
        records_trimmed=len(man["trim_records"]),
        records_relinked=len(man["relink"]),
        facts_deleted=len(man["delete_facts"]),
        facts_trimmed=len(man["trim_facts"]),
        entities_deleted=len(man["delete_entities"]),
        roster_removed=list(man["roster_remove"]),
        rederive=len(man["rederive"]),
    )
    if dry_run or not man["msg_ids"] and not man["roster_remove"]:
        return report
    store._require_writable()
    if store.in_memory:
        apply_forget(store, man, report)
        return report
    batch.begin(store.root, man)
    failpoint("forget.manifest")
    apply_forget(store, man, report)
    batch.end(store.root)
    failpoint("forget.done")
    return report
