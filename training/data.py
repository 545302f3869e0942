"""Writer training data: networks, reference states and (prompt, target actions) pairs.

Sources (``../shared/data/socialmem``):

* ``training/social_grp_<id>.json``: SocialMemBench networks (messages) paired with
  ``teacher/grp_<id>.json`` (the teacher's actions per writing segment and final state);
* ``training/manual_noop_*.json``: hand-written Writer trajectories whose transitions
  carry their own messages and actions (the NOOP boundary cases);
* any network run through one of our own Writer backends, used as the teacher
  (:func:`backend_pairs`): its validated, novel actions become the targets.

A writing segment is one teacher transition: the messages of one session. The prompt is
our Writer prompt (:func:`speakerflow.ops.write.writer.prompt.build_writer_messages`) over the
segment and the heads the teacher had written before it (teacher entry ids, so the
teacher's UPDATE ``entry_id``s resolve); the target is
:func:`~speakerflow.ops.write.writer.prompt.render_actions` of the teacher's actions.
Pairs use TRL's conversational prompt-completion format. :func:`split_by_network` keeps
every network wholly on one side.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from speakerflow.ops.write.interfaces import Segment, WriterBackend
from speakerflow.ops.write.writer.prompt import (
    PROMPT_VERSION,
    build_writer_messages,
    render_actions,
)

from .action_report import report_actions
from .speaker_levenshtein import tokens
from .state import WriterState

NOOP_TEXT = render_actions([{"action": "NOOP"}])


@dataclass
class Network:
    """One training network.

    ``segments`` are the writing positions in order (heads left empty: they depend on who
    writes); ``actions[t]`` / ``created_ids[t]`` are the teacher's at position t (empty
    lists when there is no teacher); ``has_teacher`` says whether they exist; ``source``
    is where the actions came from and ``network_file`` the messages (and qa_pairs) file.
    """

    network_id: str
    roster: tuple[str, ...]
    segments: list[Segment]
    actions: list[list[dict[str, Any]]] = field(default_factory=list)
    created_ids: list[list[str]] = field(default_factory=list)
    has_teacher: bool = False
    source: str = ""
    network_file: str = ""

    def reference_states(self) -> list[WriterState]:
        """The teacher's state after each position (M*_t), with the teacher's entry ids."""
        state = WriterState(roster=self.roster)
        out = []
        for t, seg in enumerate(self.segments):
            state.apply(
                self.actions[t], position=t, ids=self.created_ids[t] or None, ts=_first_ts(seg)
            )
            out.append(state.copy())
        return out


def _first_ts(seg: Segment) -> str:
    return str(seg.messages[0].get("ts", "")) if seg.messages else ""


def _names(speakers: Iterable[Any]) -> tuple[str, ...]:
    return tuple(s["name"] if isinstance(s, dict) else str(s) for s in speakers)


def load_network(path: Path, teacher_dir: Path | None = None) -> Network:
    """A SocialMemBench network file, with its teacher transitions when ``teacher_dir`` has
    ``<network_id>.json``. Segments follow the teacher's sessions (else one per session)."""
    from speakerflow.ops.loaders.socialmem import load_socialmem

    data = json.loads(path.read_text())
    [(gid, table)] = load_socialmem(path)
    roster = _names(data.get("speakers") or sorted(set(table["speaker"].to_pylist())))
    by_session: dict[str, list[dict[str, Any]]] = {}
    for row in table.to_pylist():
        by_session.setdefault(row["session_id"], []).append(row)
    teacher_path = teacher_dir / f"{gid}.json" if teacher_dir else None
    if teacher_path is None or not teacher_path.is_file():
        segs = [Segment(f"{sid}#0", gid, roster, tuple(msgs)) for sid, msgs in by_session.items()]
        return Network(
            gid, roster, segs, [[] for _ in segs], [[] for _ in segs], False, str(path), str(path)
        )
    teacher = json.loads(teacher_path.read_text())
    net = Network(
        gid, roster, [], has_teacher=True, source=str(teacher_path), network_file=str(path)
    )
    for i, tr in enumerate(teacher.get("transitions") or []):
        sid = tr.get("session_id")
        if sid not in by_session:
            raise ValueError(
                f"{teacher_path}: transitions[{i}].session_id {sid!r} is not a session "
                f"of {path}; pair each teacher file with its own network"
            )
        net.segments.append(Segment(f"{sid}#0", gid, roster, tuple(by_session[sid])))
        net.actions.append(list(tr.get("actions") or []))
        net.created_ids.append(list(tr.get("created_ids") or []))
    return net


def load_trajectory(path: Path) -> Network:
    """A Writer trajectory file (transitions that carry ``messages`` and ``actions``)."""
    data = json.loads(path.read_text())
    gid = data.get("network_id") or path.stem
    segs, acts, ids = [], [], []
    roster: list[str] = []
    for i, tr in enumerate(data.get("transitions") or []):
        msgs = []
        for j, m in enumerate(tr.get("messages") or []):
            if "speaker" not in m or "content" not in m:
                raise ValueError(
                    f"{path}: transitions[{i}].messages[{j}] needs speaker and content"
                )
            roster += [m["speaker"]] if m["speaker"] not in roster else []
            msgs.append(
                {
                    "msg_id": f"{gid}:{m.get('msg_id', j)}",
                    "speaker": m["speaker"],
                    "text": m["content"],
                    "ts": m.get("ts") or tr.get("ts") or "",
                    "session_id": m.get("session") or tr.get("session_id") or gid,
                    "turn": j,
                }
            )
        segs.append(Segment(f"{tr.get('session_id', gid)}#0", gid, (), tuple(msgs)))
        acts.append(list(tr.get("actions") or []))
        ids.append(list((tr.get("report") or {}).get("created_ids") or tr.get("created_ids") or []))
    segs = [replace(s, roster=tuple(roster)) for s in segs]
    return Network(gid, tuple(roster), segs, acts, ids, True, str(path), str(path))


def load_networks(training_dir: str | Path, teacher_dir: str | Path | None = None) -> list[Network]:
    """Every network under ``training_dir`` (a folder or one file), sorted by id.

    ``teacher_dir`` defaults to a ``teacher`` folder beside ``training_dir``. Files that
    are neither networks nor trajectories with messages are refused with their path.
    """
    root = Path(training_dir)
    if not root.exists():
        raise FileNotFoundError(
            f"{root}: no such file or folder (pass the socialmem training folder)"
        )
    if teacher_dir is None:
        guess = (root if root.is_dir() else root.parent).parent / "teacher"
        teacher_dir = guess if guess.is_dir() else None
    files = sorted(root.glob("*.json")) if root.is_dir() else [root]
    nets = []
    for path in files:
        head = json.loads(path.read_text())
        if "sessions" in head:
            nets.append(load_network(path, Path(teacher_dir) if teacher_dir else None))
        elif any(tr.get("messages") for tr in head.get("transitions") or []):
            nets.append(load_trajectory(path))
        else:
            raise ValueError(f"{path}: neither a network (sessions) nor a trajectory with messages")
    return sorted(nets, key=lambda n: n.network_id)


def teacher_overlap(net: Network) -> float | None:
    """Share of the teacher's content tokens that occur in the network's own messages.

    The Writer contract asks for memory in the language of the chat; a teacher that wrote
    in another language (two of the ten SocialMemBench teacher files: Polish and Italian
    records of English chats) scores far lower (0.14-0.19 against 0.72-0.87 for the rest).
    None when the teacher wrote no content.
    """
    vocab = {
        t for seg in net.segments for m in seg.messages for t in tokens(str(m.get("text", "")))
    }
    toks = [t for acts in net.actions for a in acts for t in tokens(str(a.get("content") or ""))]
    return sum(t in vocab for t in toks) / len(toks) if toks else None


def trusted(nets: Sequence[Network], min_overlap: float) -> tuple[list[Network], list[str]]:
    """(networks whose teacher passes :func:`teacher_overlap` >= ``min_overlap``, ids refused);
    networks without teacher content always pass."""
    keep, refused = [], []
    for net in nets:
        ov = teacher_overlap(net) if net.has_teacher else None
        if ov is not None and ov < min_overlap:
            refused.append(net.network_id)
        else:
            keep.append(net)
    return keep, refused


def pair(net: Network, t: int, segment: Segment, target: str, teacher: str) -> dict[str, Any]:
    """One SFT example in TRL's conversational prompt-completion format."""
    return {
        "network_id": net.network_id,
        "position": t,
        "segment_id": segment.segment_id,
        "teacher": teacher,
        "prompt_version": PROMPT_VERSION,
        "prompt": build_writer_messages(segment),
        "completion": [{"role": "assistant", "content": target}],
    }


def teacher_pairs(net: Network) -> list[dict[str, Any]]:
    """(prompt, teacher actions) per writing segment, prompts showing the teacher's heads."""
    if not net.has_teacher:
        return []
    out = []
    state = WriterState(roster=net.roster)
    for t, seg in enumerate(net.segments):
        seg_t = replace(seg, heads=tuple(state.heads()))
        target = render_actions(net.actions[t]) if net.actions[t] else NOOP_TEXT
        out.append(pair(net, t, seg_t, target, "teacher"))
        state.apply(net.actions[t], position=t, ids=net.created_ids[t] or None, ts=_first_ts(seg))
    return out


def backend_pairs(net: Network, backend: WriterBackend) -> list[dict[str, Any]]:
    """(prompt, actions) per segment with one of our Writer backends as the teacher.

    The backend writes the whole network in order; only its schema-valid, novel actions
    are kept as the target (NOOP when none), and they build the state later prompts see.
    """
    out = []
    state = WriterState(roster=net.roster)
    for t, seg in enumerate(net.segments):
        seg_t = replace(seg, heads=tuple(state.heads()))
        proposal = backend.propose(seg_t)
        text = (
            proposal.raw_text if proposal.parse_error else json.dumps({"actions": proposal.actions})
        )
        rep = report_actions(text or "", state, segment=seg_t, position=t)
        kept = rep.valid_actions
        out.append(
            pair(
                net,
                t,
                seg_t,
                render_actions(kept) if kept else NOOP_TEXT,
                getattr(backend, "name", "backend"),
            )
        )
        state.apply(kept, position=t, ids=rep.created_ids, ts=_first_ts(seg))
    return out


def build_sft_dataset(
    training_dir: str | Path,
    teacher_dir: str | Path | None = None,
    *,
    backend: WriterBackend | None = None,
    min_teacher_overlap: float = 0.0,
) -> list[dict[str, Any]]:
    """SFT pairs for every writing segment under ``training_dir``.

    With ``backend`` None the teacher files (and trajectories) supply the targets, minus
    networks whose teacher fails ``min_teacher_overlap`` (see :func:`teacher_overlap`);
    otherwise ``backend`` is the teacher for every network (see :func:`backend_pairs`).
    """
    nets = load_networks(training_dir, teacher_dir)
    if backend is None:
        nets, _ = trusted(nets, min_teacher_overlap)
    out: list[dict[str, Any]] = []
    for net in nets:
        out += backend_pairs(net, backend) if backend is not None else teacher_pairs(net)
    return out


def network_id_of(item: Any) -> str:
    """The network id of a pair dict or a :class:`Network`."""
    return item["network_id"] if isinstance(item, dict) else item.network_id


def split_by_network(
    items: Sequence[Any],
    *,
    heldout: Sequence[str] | None = None,
    heldout_fraction: float = 0.2,
    seed: int = 0,
) -> tuple[list[Any], list[Any]]:
    """Split pairs (or :class:`Network` objects) into (train, held-out) by whole network:
    no network on both sides.

    ``heldout`` names the held-out networks; else ``ceil(fraction * n)`` networks are drawn
    with ``seed`` from the sorted ids (at least one stays in training), so pairs and
    networks of the same folder split the same way.
    """
    ids = sorted({network_id_of(it) for it in items})
    if heldout is None:
        k = min(len(ids) - 1, math.ceil(heldout_fraction * len(ids))) if len(ids) > 1 else 0
        heldout = random.Random(seed).sample(ids, k)
    held = set(heldout)
    return (
        [it for it in items if network_id_of(it) not in held],
        [it for it in items if network_id_of(it) in held],
    )


def write_jsonl(items: Iterable[dict[str, Any]], path: str | Path) -> Path:
    """Write one JSON object per line (UTF-8); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for it in items:
            fh.write(json.dumps(it, ensure_ascii=False, default=str) + "\n")
    return path


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Read a file written by :func:`write_jsonl`."""
    return [
        json.loads(line)
        for line in Path(path).read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
