"""The chat-model backend of extraction: ask a :class:`~speakerflow.ops.backends.base.ChatBackend`
for a JSON list of ``{"subject", "relation", "value"}`` and validate every row like a rule hit
(a relation of the pack, a subject of the right type, a value grounded in the text); bad rows
are rejected with a reason (:attr:`KnowledgeExtractor.rejects`)."""

from __future__ import annotations

from typing import Any

from speakerflow.ops.backends.json_repair import repair_json
from speakerflow.ops.knowledge.candidates import Candidate, Event
from speakerflow.ops.knowledge.values import read_value

#: the calling :class:`~speakerflow.ops.knowledge.extract_knowledge.KnowledgeExtractor`, typed
#: loosely so that this module and its caller do not import each other
KnowledgeExtractor = Any


def chat_extract(x: KnowledgeExtractor, ev: Event) -> list[Candidate]:
    """Candidate facts of ``ev`` read by ``x.backend`` (a ChatBackend)."""
    lex = x.lex
    rels = ", ".join(f"{r.name} ({r.subject}: {r.object or r.value})" for r in lex.relations)
    prompt = [
        {
            "role": "system",
            "content": lex.extraction_prompt + " Reply with a JSON list of "
            '{"subject": ..., "relation": ..., "value": ...}; relations: ' + rels,
        },
        {"role": "user", "content": f"speaker: {ev.speaker}\nevent: {ev.text}"},
    ]
    res = x.backend.chat(prompt, max_tokens=400, temperature=0.0)
    x.model_calls += 1
    x.tokens += res.tokens
    fixed = repair_json(res.text)
    rows = fixed.value
    if isinstance(rows, dict) and isinstance(rows.get("facts"), list):
        rows = rows["facts"]
    if fixed.error or not isinstance(rows, list):
        _reject(
            x,
            ev,
            None,
            f"reply is not a JSON list ({fixed.error or type(rows).__name__}); "
            "fix the prompt or the model",
        )
        return []
    out = []
    for i, row in enumerate(rows):
        cand = _validate_row(x, ev, i, row)
        if cand is not None:
            out.append(cand)
    return out


def _validate_row(x: KnowledgeExtractor, ev: Event, i: int, row) -> Candidate | None:
    if not isinstance(row, dict) or not all(
        isinstance(row.get(k), str) for k in ("subject", "relation", "value")
    ):
        _reject(x, ev, i, "row needs string fields subject, relation, value")
        return None
    by_name = x.lex.relation_by_name
    rel = by_name.get(row["relation"])
    if rel is None:
        _reject(x, ev, i, f"field 'relation' is {row['relation']!r}; use one of {sorted(by_name)}")
        return None
    subj_surface = (
        ev.speaker
        if row["subject"].lower() in ("i", "me", "user", ev.speaker.lower())
        else row["subject"]
    )
    subject = x.canon.resolve_surface(subj_surface, rel.subject)
    if subject is None:
        _reject(x, ev, i, f"field 'subject' {row['subject']!r} is not a {rel.subject}")
        return None
    if row["value"].lower() not in ev.text.lower() and rel.value != "category":
        _reject(x, ev, i, f"field 'value' {row['value']!r} is not in the event text (ungrounded)")
        return None
    if rel.literal:
        value = read_value(rel, row["value"], lex=x.lex)
    else:
        value = x.canon.resolve_surface(row["value"], rel.object or "")
    if value is None:
        _reject(
            x,
            ev,
            i,
            f"field 'value' {row['value']!r} is not a valid {rel.object or rel.value} for "
            f"{rel.name}",
        )
        return None
    return x.candidate(ev, subject, rel, value, ev.text)


def _reject(x: KnowledgeExtractor, ev: Event, i: int | None, reason: str) -> None:
    x.rejects.append({"msg_id": ev.msg_id, "row": i, "reason": reason})
