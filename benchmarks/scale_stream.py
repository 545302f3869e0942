"""The synthetic multi-party stream of ``speakerflow bench scale`` (see
:mod:`speakerflow.benchmarks.scale`), its cached MiniLM vectors and the questions asked of it."""

from __future__ import annotations

import hashlib
import json
import random
import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

from speakerflow.schemas import MESSAGE_SCHEMA

GROUP_SIZE = 1_000  # messages per group in the "many groups" shape
LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"
NAMES = (
    "Ana Ben Caro Dev Eli Fay Gus Hana Ivo Jun Kai Lea Max Nia Oli Pia Quin Rae Sam Tia Uma Vic "
    "Wes "
    "Xia Yan Zoe Abe Bea Cal Dan Eva Finn Gia Hal Isa Jay Kit Lou Mia Ned"
).split()
_SENT = re.compile(r"(?<=[.!?])\s+")


def _sentences(locomo: Path | None = LOCOMO) -> list[str]:
    """The sentence pool: LoCoMo turns split into sentences, else the bundled team chat."""
    texts: list[str] = []
    if locomo is not None and Path(locomo).exists():
        for conv in json.loads(Path(locomo).read_text()):
            for key, turns in conv["conversation"].items():
                if key.startswith("session_") and isinstance(turns, list):
                    texts.extend(t.get("text", "") for t in turns)
    else:
        from speakerflow.settings import BUNDLED_SAMPLE

        for line in Path(BUNDLED_SAMPLE).read_text().splitlines():
            if line.strip():
                texts.append(json.loads(line).get("text", ""))
    out = sorted({s.strip() for t in texts for s in _SENT.split(t) if 3 <= len(s.split()) <= 60})
    return out


def _fact_templates() -> tuple[list[str], list[str], list[str], dict[str, list[str]]]:
    from speakerflow.benchmarks.harness.generator import ASSETS, STATE, TRADERS, WORDS

    templates = [
        t
        for rel in ("fee", "regime", "liquidity", "win_rate", "max_drawdown", "status")
        for t in STATE[rel].split("|")
    ]
    assets = [a for names in ASSETS.values() for a in names[:2]]
    traders = [f"@{t}" for t in TRADERS]
    return templates, assets, traders, WORDS


def synthetic_stream(
    n: int, shape: str = "one", seed: int = 7, group: str = "big", locomo: Path | None = LOCOMO
) -> pa.Table:
    """``n`` messages of the shape ``one`` (one group ``group``) or ``many`` (groups
    ``g000000``, ``g000001`` ... of :data:`GROUP_SIZE` messages each), deterministic."""
    sents = _sentences(locomo)
    templates, assets, traders, words = _fact_templates()
    word_values = [w for ws in words.values() for w in ws]
    text_rng = random.Random(seed)  # texts, sessions, times, replies
    who_rng = random.Random(seed + 1)  # rosters and speakers
    t = datetime(2025, 1, 1, tzinfo=UTC)
    cols: dict[str, list] = {
        k: []
        for k in ("msg_id", "group_id", "session_id", "turn", "ts", "speaker", "text", "reply_to")
    }
    roster: list[str] = []
    weights: list[float] = []
    session_left = turn = 0
    session = -1
    gid = group
    session_start = 0
    for i in range(n):
        if shape == "many" and i % GROUP_SIZE == 0:
            gid = f"g{i // GROUP_SIZE:06d}"
            size = who_rng.randint(3, 10)
            roster = who_rng.sample(NAMES, size)
            session_left = 0
        elif shape == "one" and i == 0:
            roster = list(NAMES[:30])
        if not weights or len(weights) != len(roster):
            weights = [1.0 / (r + 1) ** 0.8 for r in range(len(roster))]
        if session_left == 0:
            session += 1
            session_left = text_rng.randint(20, 120)
            turn = 0
            session_start = i
            t += timedelta(hours=text_rng.randint(3, 72))
        speaker = who_rng.choices(roster, weights)[0]
        if text_rng.random() < 0.05:
            tpl = text_rng.choice(templates)
            text = tpl.format(
                a=text_rng.choice(assets),
                t=text_rng.choice(traders),
                v=f"{text_rng.randint(1, 60) / 10:.1f}%",
                w=text_rng.choice(word_values),
            )
        else:
            k = text_rng.choices((1, 2, 3), (0.5, 0.35, 0.15))[0]
            text = " ".join(text_rng.choice(sents) for _ in range(k))
        reply = None
        if turn > 0 and text_rng.random() < 0.2:
            reply = cols["msg_id"][text_rng.randint(session_start, i - 1)]
        cols["msg_id"].append(f"m{i:08d}")
        cols["group_id"].append(gid)
        cols["session_id"].append(f"s{session:07d}")
        cols["turn"].append(turn)
        cols["ts"].append(t)
        cols["speaker"].append(speaker)
        cols["text"].append(text)
        cols["reply_to"].append(reply)
        t += timedelta(seconds=text_rng.randint(5, 600))
        turn += 1
        session_left -= 1
    table = pa.table(cols)
    return table.select([c for c in MESSAGE_SCHEMA.names if c in table.column_names])


# -- embeddings: MiniLM through a persistent text cache ------------------------------------------
class CachedEmbedder:
    """An embedder that looks texts up in a persistent cache (sha1 of the text -> vector)
    before asking the model: a benchmark embeds a stream once and reuses it across runs.
    Same ``name`` and ``dim`` as the model, so the group's own embedding files match."""

    def __init__(self, inner, path: str | Path | None):
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.path = Path(path) if path else None
        self.table: dict[bytes, np.ndarray] = {}
        self.encoded = 0
        if self.path is not None and self.path.exists():
            with np.load(self.path, allow_pickle=False) as data:
                made_by = str(data["name"]) if "name" in data.files else "minilm-l6-v2"
                if made_by != self.name:  # vectors of another model (or precision)
                    raise ValueError(
                        f"{self.path} holds {made_by} vectors, not {self.name}: use another "
                        "--embed-cache (or SPEAKERFLOW_EMBEDDER_PRECISION)"
                    )
                raw = data[
                    "keys"
                ].tobytes()  # fixed 20-byte digests (an S20 item would drop trailing NULs)
                keys = [raw[i : i + 20] for i in range(0, len(raw), 20)]
                self.table = dict(zip(keys, data["vecs"], strict=True))

    @staticmethod
    def key(text: str) -> bytes:
        return hashlib.sha1(text.encode()).digest()

    def encode(self, texts: list[str]) -> np.ndarray:
        keys = [self.key(t) for t in texts]
        miss = [i for i, k in enumerate(keys) if k not in self.table]
        if miss:
            vecs = self.inner.encode([texts[i] for i in miss])
            self.encoded += len(miss)
            for i, v in zip(miss, vecs, strict=True):
                self.table[keys[i]] = np.asarray(v, dtype=np.float32)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.table[k] for k in keys]).astype(np.float32)

    def save(self) -> None:
        if self.path is None or not self.encoded:
            return
        keys = list(self.table)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(
            tmp,
            keys=np.frombuffer(b"".join(keys), dtype="S20"),
            vecs=np.stack([self.table[k] for k in keys]),
            name=np.array(self.name),
        )
        tmp.replace(self.path)


def labelled(table: pa.Table) -> list[str]:
    """``"speaker: text"`` per message: what the dense channel embeds."""
    return [
        f"{s}: {t}"
        for s, t in zip(table["speaker"].to_pylist(), table["text"].to_pylist(), strict=True)
    ]


def stream_embedder(precision: str | None = None, threads: int = 1):
    """MiniLM for the dense columns: ``precision`` (``torch``, ``fp32``, ``int8``; default
    ``$SPEAKERFLOW_EMBEDDER_PRECISION`` as the query path reads it), ``threads`` for batches
    (questions run on one thread either way)."""
    from speakerflow.ops.text.embed import MiniLMEmbedder, minilm_embedder
    from speakerflow.ops.text.onnx_minilm import OnnxMiniLMEmbedder

    emb = minilm_embedder(precision)
    if isinstance(emb, OnnxMiniLMEmbedder):  # no torch in the process (nor in its RSS)
        emb.threads = threads
    elif isinstance(emb, MiniLMEmbedder):
        import torch

        torch.set_num_threads(threads)
        emb.small_batch = 1
    return emb


def embed_stream(
    n: int,
    cache: str | Path,
    seed: int = 7,
    chunk: int = 2_000,
    threads: int = 1,
    precision: str | None = None,
) -> dict:
    """Embed the labelled texts of the one-group stream of ``n`` messages into ``cache``
    (resumable: texts already there are skipped; saved every ``chunk`` messages) with
    :func:`stream_embedder` (batched: sorted by length within each chunk)."""
    emb = CachedEmbedder(stream_embedder(precision, threads), cache)
    texts = labelled(synthetic_stream(n, "one", seed))
    start = time.perf_counter()
    for lo in range(0, n, chunk):
        before = emb.encoded
        emb.encode(texts[lo : lo + chunk])
        if emb.encoded > before:
            emb.save()
            print(
                f"{lo + chunk}/{n} embedded ({emb.encoded / (time.perf_counter() - start):.1f}/s)",
                flush=True,
            )
    return {
        "messages": n,
        "embedder": emb.name,
        "encoded": emb.encoded,
        "seconds": round(time.perf_counter() - start, 1),
    }


# -- one size, one shape (runs in its own process) ----------------------------------------------
_WORD = re.compile(r"[A-Za-z][a-z]{3,}")
_STOP = set(
    "that this with have been what when where there their they them then than your from were will "
    "would could should about just like really know think going also much very some into more "
    "thats it's yeah thanks thank make made sure good great love things thing feel well".split()
)


def questions(table: pa.Table, count: int, seed: int) -> list[str]:
    """Questions about random messages of ``table``: a speaker and two or three of its words."""
    return [q for q, _ in questions_with_sources(table, count, seed)]


def questions_with_sources(table: pa.Table, count: int, seed: int) -> list[tuple[str, int]]:
    """:func:`questions` with the row of ``table`` each question was made from (its source
    message: a label for a retrieval check in a group too large to label by hand)."""
    rng = random.Random(seed)
    speakers, texts = table["speaker"].to_pylist(), table["text"].to_pylist()
    out: list[tuple[str, int]] = []
    while len(out) < count:
        i = rng.randrange(len(texts))
        words = [w for w in _WORD.findall(texts[i]) if w.lower() not in _STOP]
        if len(words) < 2:
            continue
        topic = " ".join(rng.sample(words, min(len(words), rng.randint(2, 3)))).lower()
        shape = rng.choice(
            (
                "What did {s} say about {t}?",
                "When did {s} mention {t}?",
                "Who talked about {t}?",
                "What does {s} think of {t}?",
            )
        )
        out.append((shape.format(s=speakers[i], t=topic), i))
    return out


#: messages per append of the big group when none is given (0): the whole stream in one
#: append, as ``speakerflow ingest`` of a file appends each group's messages at once
WHOLE = 0


def slices(n: int, size: int):
    """(start, length) of consecutive appends of ``size`` messages (``size`` <= 0: one
    append of all ``n``)."""
    size = size if size > 0 else max(n, 1)
    for lo in range(0, n, size):
        yield lo, min(size, n - lo)


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
