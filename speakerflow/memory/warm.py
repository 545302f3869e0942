"""Warm before ready: what a server process loads before it answers, and how long it took."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from speakerflow.memory.core import Memory


@dataclass
class Warmth:
    """What one server process has warm: the embedder (model and question session), the
    groups whose read snapshot is taken (with the query path's caches built on it, and the
    group's knowledge for ``inject``) and the injector (the InKH intent classifier: its
    model and exemplar vectors), with the seconds each took."""

    role: str = "server"
    ready: bool = False
    embedder_s: float | None = None
    groups: list[str] = field(default_factory=list)
    groups_s: float | None = None
    injector_s: float | None = None
    seconds: float | None = None
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "ready": self.ready,
            "warm": {
                "embedder": self.embedder_s is not None,
                "groups": len(self.groups),
                "injector": self.injector_s is not None,
                "seconds": {
                    "embedder": self.embedder_s,
                    "groups": self.groups_s,
                    "injector": self.injector_s,
                    "total": self.seconds,
                },
                "errors": self.errors[:10],
            },
        }


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def warm_up(
    memory: Memory,
    warmth: Warmth | None = None,
    say: Callable[[str], None] | None = None,
    max_groups: int | None = None,
    groups: list[str] | None = None,
) -> Warmth:
    """Load, in order: the embedder (a question and a batch encoded: both sessions of
    MiniLM on onnxruntime where they differ), the read snapshot of each
    existing group (or of ``groups``; at most ``max_groups``, default the memory's
    ``max_open``; the query
    path's caches are built on it), and the injector (the InKH intent classifier every
    ``inject`` runs: its MiniLM and exemplar vectors).
    A group that cannot be opened (another process writes it) is listed in ``errors`` and
    skipped. Says what it loads and how long it took on ``say`` (default stderr); marks
    ``warmth`` ready at the end."""
    from speakerflow.ops.knowledge.reader import intent_classifier

    say = say or _stderr
    warmth = warmth or Warmth()
    start = time.perf_counter()
    emb = memory.embedder
    if emb is not None:
        say(f"speakerflow {warmth.role}: loading the embedder {emb.name} ...")
        t0 = time.perf_counter()
        emb.encode(["warm up"])  # a question: the one-text session
        emb.encode([f"warm up {i}" for i in range(8)])  # evidence and new rows: the many-text one
        warmth.embedder_s = round(time.perf_counter() - t0, 2)
    names = (memory.groups() if groups is None else groups)[
        : max_groups if max_groups is not None else memory.max_open
    ]
    if names:
        say(f"speakerflow {warmth.role}: warming {len(names)} group(s) ...")
    t0 = time.perf_counter()
    for name in names:
        try:
            memory.snapshot(name)
            warmth.groups.append(name)
        except Exception as exc:  # noqa: BLE001 - reported by /healthz; the group opens on use
            warmth.errors.append(f"{name}: {type(exc).__name__}: {exc}")
    warmth.groups_s = round(time.perf_counter() - t0, 2)
    say(f"speakerflow {warmth.role}: loading the injector ...")
    t0 = time.perf_counter()
    intent_classifier().best("warm up")
    warmth.injector_s = round(time.perf_counter() - t0, 2)
    warmth.seconds = round(time.perf_counter() - start, 2)
    warmth.ready = True
    parts = [
        f"embedder {warmth.embedder_s} s" if warmth.embedder_s is not None else "no embedder",
        f"{len(warmth.groups)} group(s) {warmth.groups_s} s",
    ]
    if warmth.injector_s is not None:
        parts.append(f"injector {warmth.injector_s} s")
    say(f"speakerflow {warmth.role}: warm in {warmth.seconds} s ({', '.join(parts)})")
    for err in warmth.errors:
        say(f"speakerflow {warmth.role}: not warmed: {err}")
    return warmth
