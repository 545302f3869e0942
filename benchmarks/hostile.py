"""A generated corpus of malformed and hostile input files, over every input format.

:func:`generate` writes the files (at least 500) and returns one :class:`Case` per file:
the format, the ``--group`` to pass (or ``None``), what is wrong and the field an error
must name. :func:`check` runs each through the loaders (and, for the store-level cases,
``GroupStore.append_messages``) and reports whether every one failed with ONE clear error
(a :class:`~speakerflow.ops.loaders.LoadError` / ``StoreError`` naming the file, the
line/record/turn and the field) and whether the store's files stayed byte-for-byte equal.

Categories: truncated JSON, wrong types, missing fields, invalid UTF-8, NUL characters
(escaped and raw), 10 MB messages, deep nesting, duplicate ids with different text (in a
file, and against the store), timestamps out of range / without zone / unreadable, group
ids with path separators or ``..``, and lines or events claiming another group.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BIG = 10 * 1024 * 1024
TS = "2026-03-02T09:00:00Z"
BAD_GROUPS = ["../escape", "..", "a/b", "/abs", "a\\b", "", "x" * 200, ".hidden", "g\x00g", "g h"]
BAD_TS = [
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59Z",
    "not a time",
    "2026-13-45T00:00:00Z",
    "1850-06-01T00:00:00Z",
]
WRONG = [123, 4.5, [], {}, True, None]


@dataclass
class Case:
    path: Path
    fmt: str
    group: str | None
    category: str
    field: str | None  # the field the error must name (None: structural, no field)
    store_level: bool = False


def _jsonl_rows(n: int = 4) -> list[dict[str, Any]]:
    return [
        {
            "msg_id": f"h{i}",
            "session_id": "s1",
            "turn": i,
            "ts": f"2026-03-02T09:0{i}:00Z",
            "speaker": "Ana" if i % 2 else "Ben",
            "text": f"hostile test message number {i}",
        }
        for i in range(n)
    ]


def _event_rows(n: int = 4) -> list[dict[str, Any]]:
    return [
        {
            "event_id": f"e{i}",
            "group_id": "g1",
            "ts": f"2026-03-02T09:0{i}:00Z",
            "source_type": "user_turn",
            "source": "trader",
            "content": f"event number {i} about XBT",
        }
        for i in range(n)
    ]


def _locomo(n: int = 4) -> list[dict[str, Any]]:
    turns = [
        {"speaker": "Ana" if i % 2 else "Ben", "dia_id": f"D1:{i}", "text": f"locomo line {i}"}
        for i in range(n)
    ]
    return [
        {
            "sample_id": "conv-h",
            "conversation": {
                "speaker_a": "Ana",
                "speaker_b": "Ben",
                "session_1": turns,
                "session_1_date_time": "1:56 pm on 8 May, 2023",
            },
        }
    ]


def _social(n: int = 4) -> dict[str, Any]:
    turns = [
        {
            "turn": f"t{i}",
            "speaker": "Ana" if i % 2 else "Ben",
            "content": f"social line {i}",
            "ts": f"2025-10-06T12:0{i}:00",
        }
        for i in range(n)
    ]
    return {
        "speakers": ["Ana", "Ben"],
        "sessions": [{"session_id": "s1", "turns": turns}],
        "meta": {"network_id": "net-h"},
    }


def _lines(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def generate(out: str | Path) -> list[Case]:
    """Write the corpus under ``out``; returns the cases (>= 500)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    corpus = _Corpus(out)
    # -- line formats: jsonl (group from --group) and events --------------------------
    fields: tuple[str, ...]
    for fmt, rows_of, fields, group in (
        ("jsonl", _jsonl_rows, ("msg_id", "speaker", "text", "ts", "session_id"), "g1"),
        ("events", _event_rows, ("event_id", "source", "content", "ts", "source_type"), None),
    ):
        _line_format(corpus, fmt, rows_of, fields, group)
    # -- whole-file formats: locomo and socialmem --------------------------------------
    for fmt, maker, fields in (
        ("locomo", _locomo_turn, ("dia_id", "speaker", "text")),
        ("socialmem", _social_turn, ("turn", "speaker", "content", "ts")),
    ):
        _file_format(corpus, fmt, maker, fields)
    _file_fields(corpus)
    _stored_ids(corpus)
    return corpus.cases


class _Corpus:
    """The corpus folder and the cases written to it so far (files numbered in order)."""

    def __init__(self, out: Path):
        self.out = out
        self.cases: list[Case] = []

    def put(
        self,
        data: bytes,
        fmt: str,
        category: str,
        field: str | None,
        group: str | None = None,
        ext: str | None = None,
        store_level: bool = False,
    ) -> None:
        slug = re.sub(r"[^a-z0-9]+", "_", category)
        suffix = ext or ("jsonl" if fmt in ("jsonl", "events") else "json")
        path = self.out / f"{len(self.cases) + 1:04d}-{fmt}-{slug}.{suffix}"
        path.write_bytes(data)
        self.cases.append(Case(path, fmt, group, category, field, store_level))


def _line_format(
    corpus: _Corpus,
    fmt: str,
    rows_of: Callable[[], list[dict[str, Any]]],
    fields: tuple[str, ...],
    group: str | None,
) -> None:
    """The cases of a line format (jsonl, events): truncated files, then per row position
    bad fields and values, then a 10 MB message, a non-object and an empty file."""
    # the loader's name for an events field: event_id -> msg_id, source -> speaker, content ->
    # text
    alias = (
        {"event_id": "msg_id", "source": "speaker", "content": "text"} if fmt == "events" else {}
    )
    good = _lines(rows_of())
    for frac in (0.1, 0.3, 0.5, 0.7, 0.9):
        cut = int(len(good) * frac)
        while good[cut - 1 : cut] in (b"\n", b"}"):  # cut inside an object, not between lines
            cut -= 1
        corpus.put(good[:cut], fmt, "truncated", None, group)
    for at in (0, 2, 3):
        _line_fields(corpus, fmt, rows_of, fields, group, alias, at)
        _line_values(corpus, fmt, rows_of, group, alias, at)
    tf = "text" if fmt == "jsonl" else "content"
    rows = rows_of()
    rows[1][alias and "content" or "text"] = "x" * BIG
    corpus.put(_lines(rows), fmt, "10 MB message", alias.get(tf, tf), group)
    corpus.put(b"[1, 2, 3]\n", fmt, "not an object", None, group)
    corpus.put(b"", fmt, "empty file", None, group)


def _line_fields(
    corpus: _Corpus,
    fmt: str,
    rows_of: Callable[[], list[dict[str, Any]]],
    fields: tuple[str, ...],
    group: str | None,
    alias: dict[str, str],
    at: int,
) -> None:
    """Each field of row ``at`` with a value of the wrong type, and missing."""
    for f in fields:
        for bad in WRONG:
            if f == "source_type" and bad is None:
                continue
            rows = rows_of()
            rows[at][f] = bad
            want = "source_type" if f == "source_type" else alias.get(f, f)
            if (
                f in ("msg_id", "event_id", "speaker", "source", "text", "content", "ts")
                and bad is None
            ):
                want = alias.get(f, f)
            corpus.put(_lines(rows), fmt, f"wrong type {f}={type(bad).__name__}", want, group)
        if f == "session_id":
            continue  # optional: defaults to "s1"
        rows = rows_of()
        del rows[at][f]
        corpus.put(_lines(rows), fmt, f"missing {f}", alias.get(f, f), group)


def _line_values(
    corpus: _Corpus,
    fmt: str,
    rows_of: Callable[[], list[dict[str, Any]]],
    group: str | None,
    alias: dict[str, str],
    at: int,
) -> None:
    """Row ``at`` with bad bytes (invalid UTF-8, NUL), a nested or deeply nested value, a
    duplicate id, a bad timestamp, a bad group id, or another group's id."""
    raw = _lines(rows_of()).split(b"\n")
    text_key = b"hostile test" if fmt == "jsonl" else b"event number"
    raw[at] = raw[at].replace(text_key, b"\xff\xfe" + text_key)
    corpus.put(
        b"\n".join(raw),
        fmt,
        "invalid utf-8",
        alias.get("text", "text") if fmt == "jsonl" else "content",
        group,
    )
    raw = _lines(rows_of()).split(b"\n")
    raw[at] = raw[at].replace(text_key, b"\x00" + text_key)
    corpus.put(b"\n".join(raw), fmt, "raw NUL byte", None, group)
    tf, sf = ("text", "speaker") if fmt == "jsonl" else ("content", "source")
    for f in (tf, sf):
        rows = rows_of()
        rows[at][f] = "a\u0000b"
        corpus.put(_lines(rows), fmt, f"NUL in {f}", alias.get(f, f), group)
    rows = rows_of()
    rows[at][tf] = [[[[[["deep"]]]]]]
    corpus.put(_lines(rows), fmt, "nested value", alias.get(tf, tf), group)
    raw = _lines(rows_of()).split(b"\n")
    raw[at] = b'{"' + tf.encode() + b'": ' + b"[" * 100_000 + b"1" + b"]" * 100_000 + b"}"
    corpus.put(b"\n".join(raw), fmt, "deep nesting", None, group)
    rows = rows_of()
    idf = "event_id" if fmt == "events" else "msg_id"
    rows[at][idf] = rows[(at + 1) % 4][idf]
    corpus.put(_lines(rows), fmt, "duplicate id with different text", "msg_id", group)
    for ts in (*BAD_TS, "2026-03-02T09:00:00", 1e20):
        rows = rows_of()
        rows[at]["ts"] = ts
        corpus.put(_lines(rows), fmt, f"timestamp {ts!r}", "ts", group)
    for g in BAD_GROUPS:
        rows = rows_of()
        for r in rows:
            r["group_id"] = g
        corpus.put(_lines(rows), fmt, f"group id {g[:20]!r}", "group_id", None)
    rows = rows_of()
    rows[at]["group_id"] = "other-group"
    corpus.put(_lines(rows), fmt, "claims another group", "group_id", "g1")


def _locomo_turn(i: int, key: str, value: Any) -> bytes:
    """The LoCoMo file with turn ``i``'s ``key`` set to ``value`` (``_DEL``: removed)."""
    data = _locomo()
    turn = data[0]["conversation"]["session_1"][i]
    if value is _DEL:
        del turn[key]
    else:
        turn[key] = value
    return json.dumps(data).encode()


def _social_turn(i: int, key: str, value: Any) -> bytes:
    """The SocialMem file with turn ``i``'s ``key`` set to ``value`` (``_DEL``: removed)."""
    data = _social()
    turn = data["sessions"][0]["turns"][i]
    if value is _DEL:
        del turn[key]
    else:
        turn[key] = value
    return json.dumps(data).encode()


def _file_format(
    corpus: _Corpus, fmt: str, maker: Callable[[int, str, Any], bytes], fields: tuple[str, ...]
) -> None:
    """The cases of a whole-file format (locomo, socialmem): truncated files, per turn bad
    fields and values, a 10 MB message, binary garbage and an empty file."""
    good = json.dumps(_locomo() if fmt == "locomo" else _social(), indent=1).encode()
    for frac in (0.05, 0.2, 0.4, 0.6, 0.8, 0.95):
        corpus.put(good[: int(len(good) * frac)], fmt, "truncated", None)
    for at in (0, 1, 3):
        for f in fields:
            for bad in WRONG:
                corpus.put(maker(at, f, bad), fmt, f"wrong type {f}={type(bad).__name__}", f)
            corpus.put(maker(at, f, _DEL), fmt, f"missing {f}", f)
        tf = "text" if fmt == "locomo" else "content"
        bad_utf8 = maker(at, tf, "MARK bad bytes").replace(b"MARK", b"\xc3\x28")
        corpus.put(bad_utf8, fmt, "invalid utf-8", tf)
        corpus.put(maker(at, tf, "a\u0000b"), fmt, "NUL in text", "text")
        corpus.put(maker(at, "speaker", "A\u0000n"), fmt, "NUL in speaker", "speaker")
        corpus.put(maker(at, tf, [[["deep"]]]), fmt, "nested value", tf)
        deep = maker(at, tf, "DEEP").replace(b'"DEEP"', b"[" * 100_000 + b"1" + b"]" * 100_000)
        corpus.put(deep, fmt, "deep nesting", None)
        idf = "dia_id" if fmt == "locomo" else "turn"
        corpus.put(
            maker(at, idf, "D1:0" if fmt == "locomo" else "t0")
            if at
            else maker(at, idf, "D1:1" if fmt == "locomo" else "t1"),
            fmt,
            "duplicate id with different text",
            "msg_id",
        )
    corpus.put(
        maker(1, "text" if fmt == "locomo" else "content", "x" * BIG),
        fmt,
        "10 MB message",
        "text",
    )
    corpus.put(b"\x00" * 64, fmt, "binary garbage", None)
    corpus.put(b"", fmt, "empty file", None)


def _file_fields(corpus: _Corpus) -> None:
    """Whole-file fields outside the turns: timestamps, LoCoMo session times, group ids, and
    a conversation / sessions / turns of the wrong type."""
    data: Any
    bad: Any
    for ts in (*BAD_TS, 12345):
        data = _social()
        data["sessions"][0]["turns"][2]["ts"] = ts
        corpus.put(json.dumps(data).encode(), "socialmem", f"timestamp {ts!r}", "ts")
    for d in (
        "1:56 pm on 8 May, 1066",
        "1:56 pm on 8 May, 2999",
        "yesterday",
        "25:00 pm on 8 May, 2023",
    ):
        data = _locomo()
        data[0]["conversation"]["session_1_date_time"] = d
        corpus.put(
            json.dumps(data).encode(),
            "locomo",
            f"session time {d!r}",
            "ts" if d[-4:] in ("1066", "2999") else "conversation.session_1_date_time",
        )
    for g in BAD_GROUPS:
        data = _locomo()
        data[0]["sample_id"] = g
        corpus.put(json.dumps(data).encode(), "locomo", f"group id {g[:20]!r}", "sample_id")
        if g:  # an empty network id falls back to the file name (documented)
            data = _social()
            data["meta"]["network_id"] = g
            corpus.put(
                json.dumps(data).encode(), "socialmem", f"group id {g[:20]!r}", "meta.network_id"
            )
    for bad in ([], "x", 5):
        data = _locomo()
        data[0]["conversation"] = bad
        corpus.put(json.dumps(data).encode(), "locomo", "wrong type conversation", "conversation")
    for bad in ({}, "x", 5):
        data = _social()
        data["sessions"] = bad
        corpus.put(json.dumps(data).encode(), "socialmem", "wrong type sessions", "sessions")
        data = _social()
        data["sessions"][0]["turns"] = bad
        corpus.put(json.dumps(data).encode(), "socialmem", "wrong type turns", "turns")


def _stored_ids(corpus: _Corpus) -> None:
    """Store level: a message id already stored with other text."""
    for i in range(4):
        rows = _jsonl_rows()
        rows[i]["text"] = f"rewritten history {i}"
        corpus.put(
            _lines(rows), "jsonl", "stored id with different text", "msg_id", "g1", store_level=True
        )


class _Del:
    pass


_DEL = _Del()


def tree_hash(root: Path) -> str:
    """SHA-256 over every file's relative path and bytes under ``root``."""
    h = hashlib.sha256()
    for p in sorted(Path(root).rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(root)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()


_LOC = re.compile(r"\b(line|record|turn|row|at|byte|item) |\[\d+\]")


def clear(message: str, case: Case) -> str | None:
    """Why ``message`` is not a clear error for ``case`` (``None``: it is clear)."""
    if not case.store_level and case.path.name not in message:
        return "does not name the file"
    whole_file = (
        case.fmt == "socialmem" and case.field and f"field '{case.field}" in message
    )  # one network per file
    if not _LOC.search(message) and not case.store_level and not whole_file:
        # a whole-file fault (empty, wrong top-level type) has no line to name
        if (
            case.category not in ("empty file",)
            and "expected" not in message
            and "no " not in message
        ):
            return "does not name a line/record/turn"
    if (
        case.field is not None
        and f"'{case.field}" not in message
        and f".{case.field}'" not in message
        and f"'{case.field}'" not in message
    ):
        return f"does not name field {case.field!r}"
    if "\n" in message.strip():
        return "more than one line"
    return None


def check(cases: list[Case], home: str | Path) -> dict[str, Any]:
    """Load every case (store-level ones are appended to group ``g1`` of ``home``, which is
    seeded first); returns counts and the failures."""
    from speakerflow.graphs import Home, StoreError
    from speakerflow.ops.loaders import LoadError, load

    h = Home(home)
    with h.open("g1", writable=True) as s:
        [(_, seed)] = load(_write_seed(Path(home)), "jsonl", group="g1")
        s.append_messages(seed)
    before = tree_hash(h.root)
    unclear, passed = [], []
    for case in cases:
        try:
            loaded = load(case.path, case.fmt, group=case.group)
            if not case.store_level:
                passed.append(case)
                continue
            with h.open("g1", writable=True) as s:
                for _, table in loaded:
                    s.append_messages(table)
            passed.append(case)
        except (LoadError, StoreError) as exc:
            why = clear(str(exc), case)
            if why:
                unclear.append(
                    {
                        "file": case.path.name,
                        "category": case.category,
                        "why": why,
                        "error": str(exc)[:300],
                    }
                )
        except Exception as exc:  # noqa: BLE001 - any other exception is an unclear failure
            unclear.append(
                {
                    "file": case.path.name,
                    "category": case.category,
                    "why": f"raised {type(exc).__name__}",
                    "error": str(exc)[:300],
                }
            )
    after = tree_hash(h.root)
    return {
        "cases": len(cases),
        "formats": sorted({c.fmt for c in cases}),
        "categories": len({c.category.split(" ")[0] for c in cases}),
        "clear_errors": len(cases) - len(unclear) - len(passed),
        "accepted": [c.path.name for c in passed],
        "unclear": unclear,
        "store_unchanged": before == after,
    }


def _write_seed(home: Path) -> Path:
    path = home.parent / "hostile-seed.jsonl"
    path.write_bytes(_lines(_jsonl_rows()))
    return path
