"""Cross-store audit of one group: do Parquet, Kuzu, Tantivy and group.json agree?

:func:`audit` reads every copy of the group's data and counts disagreements. It is what
the fault benchmark and the crash tests check after a recovery; it is also handy after
any incident (``speakerflow.graphs.audit.audit(store)``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .records import WRITTEN_KEY


def audit(store: Any) -> dict[str, Any]:
    """Counts of what disagrees between the group's stores (all zero on a healthy group).

    Keys: ``messages`` (Parquet rows), ``records`` (Kuzu), ``duplicated`` (message ids
    repeated in Parquet, Kuzu or Tantivy; record ids repeated in Tantivy), ``graph_only`` /
    ``index_only`` / ``parquet_only`` (message ids missing from a copy), ``record_index_only``
    / ``record_graph_only``, ``orphaned`` (records or facts citing a message id that is not
    stored, or records superseding/superseded by a record that is not stored),
    ``watermark_unknown`` (watermark ids that are not stored messages), ``pending_batch``.
    """
    msgs = store.messages()
    pq_ids = msgs["msg_id"].to_pylist()
    pq_set = set(pq_ids)
    out: dict[str, Any] = {
        "messages": len(pq_ids),
        "pending_batch": store.pending_batch() is not None,
    }
    dup = sum(c - 1 for c in Counter(pq_ids).values() if c > 1)
    recs = store.records().to_pylist()
    rec_ids = [r["entry_id"] for r in recs]
    if store.in_memory:
        g_ids = list(pq_ids)
        fact_ev: list[str] = []
    else:
        g_ids = [r["id"] for r in store.graph.rows("MATCH (m:Message) RETURN m.msg_id AS id")]
        fact_ev = [
            m
            for r in store.graph.rows("MATCH (f:Fact) RETURN f.evidence_ids AS ev")
            for m in (r["ev"] or [])
        ]
    ix_ids = store.index.doc_ids("message")
    ix_rec = store.index.doc_ids("record")
    dup += sum(c - 1 for c in Counter(g_ids).values() if c > 1)
    dup += sum(c - 1 for c in Counter(ix_ids).values() if c > 1)
    dup += sum(c - 1 for c in Counter(ix_rec).values() if c > 1)
    dup += sum(c - 1 for c in Counter(rec_ids).values() if c > 1)
    g_set, ix_set, rec_set, ixr_set = set(g_ids), set(ix_ids), set(rec_ids), set(ix_rec)
    orphaned = sum(1 for r in recs if any(m not in pq_set for m in r["from_ids"] or []))
    orphaned += sum(1 for r in recs if r["supersedes"] and r["supersedes"] not in rec_set)
    orphaned += sum(1 for r in recs if r["superseded_by"] and r["superseded_by"] not in rec_set)
    orphaned += sum(1 for m in fact_ev if m not in pq_set)
    out.update(
        records=len(rec_ids),
        duplicated=dup,
        graph_only=len(g_set - pq_set),
        index_only=len(ix_set - pq_set),
        parquet_only=len(pq_set - g_set) + len(pq_set - ix_set),
        record_index_only=len(ixr_set - rec_set),
        record_graph_only=len(rec_set - ixr_set),
        orphaned=orphaned,
        watermark_unknown=len(set(store.meta(WRITTEN_KEY, [])) - pq_set),
    )
    out["mismatched"] = (
        out["graph_only"]
        + out["index_only"]
        + out["parquet_only"]
        + out["record_index_only"]
        + out["record_graph_only"]
        + out["watermark_unknown"]
    )
    return out
