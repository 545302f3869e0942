"""``speakerflow eval writer``: SpeakerLevenshtein F of a Writer against reference states.

Each network (a SocialMemBench file paired with ``teacher/<network_id>.json``, or a
Writer trajectory with its own actions) is written from scratch by the real write path
(:func:`speakerflow.pipelines.write_path.write_group`: Segment >> Writer >> Validate >>
Upsert on an in-memory store) with the chosen backend; its final heads and update edges
are compared with the reference final state (the teacher's actions replayed).

Report (JSON): ``speaker_levenshtein_f`` = micro F over all networks' records (every record
weighs the same: ``2 sum(kappa) / (n_pred + n_ref)``), ``chain_f`` = micro chain F over
UPDATE edges, ``by_bucket`` = the same F for person / GROUP / cross-person records,
``phi_sl_mean`` = mean over networks of the paper's potential (0.8 mean-owner F + 0.2
worst-owner F), ``halves`` (micro F on two fixed halves of the networks, sorted by id and
taken alternately: tune on ``a``, report ``b`` beside it) and ``per_network`` rows.
References are proxy supervision (a large teacher model), not human gold.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .data import Network, load_networks, teacher_overlap, trusted
from .speaker_levenshtein import KINDS, BucketScore, score_chains, score_states
from .state import WriterState


def message_table(net: Network, segments: int | None = None):
    """The messages of ``net`` (of its first ``segments`` writing segments; None: all) as a
    System 1 message table."""
    from speakerflow.ops.loaders.common import to_message_table

    rows = []
    for seg in net.segments[:segments]:
        for m in seg.messages:
            row = {k: v for k, v in m.items() if v is not None}
            row["group_id"] = net.network_id
            rows.append(row)
    return to_message_table(rows, f"network {net.network_id}")


def write_network(
    net: Network, writer: Any, segments: int | None = None
) -> tuple[WriterState, dict[str, Any]]:
    """Write ``net`` (its first ``segments`` segments; None: all) with ``writer`` (a backend
    name or WriterBackend) on a fresh in-memory store; returns the resulting state and the
    write report summary."""
    from speakerflow.graphs import GroupStore
    from speakerflow.graphs.records import all_records
    from speakerflow.pipelines.write_path import write_group

    with tempfile.TemporaryDirectory() as tmp:
        store = GroupStore(Path(tmp), net.network_id, in_memory=True)
        store.append_messages(message_table(net, segments))
        rep = write_group(store, writer, progress=False)
        records = all_records(store)
        state = WriterState.from_records(records, roster=net.roster)
    return state, {
        "proposed": rep.proposed,
        "accepted": rep.accepted,
        "rejected": rep.rejected,
        "noops": rep.noops,
        "updates": rep.updates,
        "model_calls": rep.model_calls,
        "tokens": rep.tokens,
        # every stored record came through Validate: records == accepted writes
        "unvalidated_writes": len(records) - rep.accepted,
        "reject_reasons": _reasons(rep.rejects),
    }


def _reasons(rejects: list[dict[str, Any]]) -> dict[str, int]:
    """Reject counts by the field the contract blamed (the reason's prefix)."""
    out: dict[str, int] = {}
    for r in rejects:
        key = str(r.get("reason") or "?").split(":")[0][:40]
        out[key] = out.get(key, 0) + 1
    return out


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def _resolve_writer(backend: Any, backend_config: dict[str, Any]) -> Any:
    """A WriterBackend from a spec (:func:`~speakerflow.ops.write.writer.registry.writer_from_spec`:
    a name, ``local[@DECODING]:SPEC``, ``transformers:FOLDER`` / ``onnx:FOLDER``) or as given."""
    if not isinstance(backend, str):
        return backend
    from speakerflow.ops.write.writer.registry import writer_from_spec

    writer = writer_from_spec(backend, **backend_config)
    if writer is None:
        raise ValueError("backend 'none' writes nothing; pick a Writer backend to evaluate")
    return writer


def halves(totals: dict[str, BucketScore]) -> dict[str, dict[str, Any]]:
    """Micro F on two halves of the networks: sorted by id, alternately ``a`` and ``b``.

    A fixed split for tuning a Writer on one half and reporting the other beside it.
    """
    out = {}
    ids = sorted(totals)
    for name, part in (("a", ids[0::2]), ("b", ids[1::2])):
        half = BucketScore()
        for i in part:
            half.add(totals[i])
        out[name] = {
            "networks": part,
            "f": round(half.f, 6),
            "n_pred": half.n_pred,
            "n_ref": half.n_ref,
        }
    return out


def _select_networks(
    data: str | Path,
    teacher: str | Path | None,
    min_teacher_overlap: float,
    networks: Sequence[str] | None,
    limit: int | None,
) -> tuple[list[Any], list[Any]]:
    """The networks of ``data`` with a trusted reference state, narrowed to ``networks`` and
    the first ``limit``, and the ones refused; raises ``ValueError`` when none is left or a
    named one is missing."""
    nets, excluded = trusted(
        [n for n in load_networks(data, teacher) if n.has_teacher], min_teacher_overlap
    )
    if networks:
        unknown = set(networks) - {n.network_id for n in nets}
        if unknown:
            raise ValueError(f"networks {sorted(unknown)} are not under {data} (or refused)")
        nets = [n for n in nets if n.network_id in set(networks)]
    if limit is not None:
        nets = nets[:limit]
    if not nets:
        raise ValueError(
            f"{data}: no network has a reference state (pair network files with "
            "teacher/<network_id>.json, or pass --teacher)"
        )
    return nets, excluded


def _network_row(net: Any, sl: Any, ch: Any, write_rep: dict, t0: float) -> dict[str, Any]:
    """One network's line of the report (its scores, write report and seconds since ``t0``)."""
    return {
        "network_id": net.network_id,
        "f": round(sl.f, 6),
        "phi_sl": round(sl.phi, 6),
        "chain_f": round(ch.f, 6),
        "n_pred": sl.total.n_pred,
        "n_ref": sl.total.n_ref,
        "by_bucket": {k: round(v.f, 6) for k, v in sl.by_kind.items()},
        "teacher_overlap": _round(teacher_overlap(net)),
        "write": write_rep,
        "seconds": round(time.perf_counter() - t0, 3),
    }


def _report(
    writer: Any, backend: Any, data: str | Path, rows: list[dict], segments: int | None, excluded
) -> dict[str, Any]:
    """The head of the report: who wrote, what Validate refused, what was evaluated."""
    proposed = sum(r["write"]["proposed"] for r in rows)
    rejected = sum(r["write"]["rejected"] for r in rows)
    return {
        "backend": getattr(writer, "name", str(backend)),
        "refused_share": round(rejected / proposed, 4) if proposed else 0.0,
        "proposed": proposed,
        "unvalidated_writes": sum(r["write"]["unvalidated_writes"] for r in rows),
        "throughput": writer.throughput() if hasattr(writer, "throughput") else None,
        "data": str(data),
        "networks": len(rows),
        "segments_per_network": segments,
        "excluded_networks": excluded,
    }


def run(
    data: str | Path,
    backend: Any = "rules",
    out: str | Path | None = None,
    *,
    teacher: str | Path | None = None,
    limit: int | None = None,
    min_teacher_overlap: float = 0.0,
    networks: Sequence[str] | None = None,
    segments: int | None = None,
    **backend_config: Any,
) -> dict[str, Any]:
    """Evaluate a Writer on every network under ``data`` that has a reference state.

    Parameters
    ----------
    data : the socialmem ``training`` folder (or one network / trajectory file).
    backend : a Writer name (``rules``, ``openai``, ``transformers:FOLDER``,
        ``onnx:FOLDER``) or a WriterBackend; ``backend_config`` goes to :func:`make_writer`
        (e.g. ``model_dir``, ``max_tokens``).
    out : also write the report JSON here.
    teacher : the teacher folder (default: ``teacher`` beside ``data``).
    limit : evaluate only the first ``limit`` networks (by id).
    networks : evaluate only these network ids (e.g. the ones a Writer was not trained on).
    segments : write only the first ``segments`` writing segments (sessions) of each network
        and compare with the teacher's state after them (a cheaper run for slow Writers).
    min_teacher_overlap : skip networks whose teacher content shares fewer tokens with the
        chat (:func:`speakerflow.training.data.teacher_overlap`; 0 keeps every network).

    Returns
    -------
    dict
        The report described in the module docstring.
    """
    start = time.perf_counter()
    nets, excluded = _select_networks(data, teacher, min_teacher_overlap, networks, limit)
    writer = _resolve_writer(backend, backend_config)
    total, chains = BucketScore(), BucketScore()
    kinds = {k: BucketScore() for k in KINDS}
    rows: list[dict[str, Any]] = []
    totals: dict[str, BucketScore] = {}
    for net in nets:
        t0 = time.perf_counter()
        pred, write_rep = write_network(net, writer, segments)
        refs = net.reference_states()[:segments]
        ref = refs[-1] if refs else WriterState()
        sl = score_states(pred.heads(), ref.heads())
        ch = score_chains(pred.edge_records(), ref.edge_records())
        total.add(sl.total)
        totals[net.network_id] = sl.total
        chains.add(ch)
        for k in KINDS:
            kinds[k].add(sl.by_kind[k])
        rows.append(_network_row(net, sl, ch, write_rep, t0))
    report = _report(writer, backend, data, rows, segments, excluded)
    report.update(
        {
            "speaker_levenshtein_f": round(total.f, 6),
            "chain_f": round(chains.f, 6),
            "by_bucket": {k: v.as_dict() for k, v in kinds.items()},
            "phi_sl_mean": round(sum(r["phi_sl"] for r in rows) / len(rows), 6),
            "f_mean_over_networks": round(sum(r["f"] for r in rows) / len(rows), 6),
            "records": {"pred": total.n_pred, "ref": total.n_ref, "matched_pairs": total.pairs},
            "update_edges": {
                "pred": chains.n_pred,
                "ref": chains.n_ref,
                "matched_pairs": chains.pairs,
            },
            "halves": halves(totals),
            "per_network": rows,
            "seconds": round(time.perf_counter() - start, 3),
        }
    )
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    return report
