"""Terminal QA gain of a written network (SpeakerMem-R1 Eqs. 8 and 22), through the frozen
query path.

``R_QA = QA(System 1 + System 2; M) - QA(System 1 only)``: each of at most four questions
(sorted by id, sampled uniformly) is answered by
:func:`speakerflow.pipelines.query_path.answer_question` on an in-memory store holding the
network's messages and the trajectory's derived records, and once more with System 2
ablated on the messages alone (the verbatim-only baseline, the same for every trajectory
of the network), and the answers are judged against the gold answer.

Judges: ``token_f1`` (default, offline and judge-free: J is the answer's set token-F1, a
continuous proxy for the paper's binary judge) or ``chat`` (the binary LLM judge of
:func:`speakerflow.ops.query.judge.llm_judge` through a ChatBackend, as in the paper).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from .data import Network
from .state import WriterState


class QAGainConfig(BaseModel):
    """``max_questions`` per network (paper: 4); ``embedder`` of the query path (``minilm``,
    or ``hashing`` for tests); ``backend`` of Project/Answer (``rules`` or ``chat``);
    ``judge``: ``token_f1`` or ``chat``."""

    model_config = ConfigDict(frozen=True)

    max_questions: int = 4
    embedder: str = "minilm"
    backend: Literal["rules", "chat"] = "rules"
    judge: Literal["token_f1", "chat"] = "token_f1"


def pick_questions(qa_pairs: Sequence[dict[str, Any]], k: int) -> list[dict[str, Any]]:
    """At most ``k`` questions, sorted by id and sampled uniformly (first and last kept)."""
    qs = sorted(
        (q for q in qa_pairs if q.get("question") and q.get("answer")),
        key=lambda q: str(q.get("id")),
    )
    if len(qs) <= k:
        return qs
    return [qs[round(i * (len(qs) - 1) / (k - 1))] for i in range(k)] if k > 1 else qs[:1]


def _ts(value: Any) -> datetime:
    from speakerflow.schemas import utc

    if isinstance(value, datetime):
        return utc(value)
    return utc(datetime.fromisoformat(str(value).replace("Z", "+00:00")))


def records_by_position(net: Network, state: WriterState) -> list[tuple[list[Any], list[tuple]]]:
    """``state`` as store records: per position, (new KnowledgeItems, supersede triples).

    Provenance (``from_ids``) is the record source's messages in that segment (else the
    segment's first message); ``valid_at`` the segment's first message time.
    """
    from speakerflow.schemas import KnowledgeItem
    from speakerflow.schemas.records import GROUP_OWNER

    out: list[tuple[list[Any], list[tuple]]] = [([], []) for _ in net.segments]
    superseded = {new: old for old, new in state.edges}
    for rec in state.entries.values():
        t = min(int(rec.get("position") or 0), len(net.segments) - 1)
        seg = net.segments[t]
        when = _ts(seg.messages[0]["ts"])
        ids = [m["msg_id"] for m in seg.messages if m["speaker"] == rec["source"]] or [
            seg.messages[0]["msg_id"]
        ]
        out[t][0].append(
            KnowledgeItem(
                entry_id=rec["entry_id"],
                group_id=net.network_id,
                layer=rec["layer"],
                scope="GROUP" if rec["owner"] == GROUP_OWNER else "PERSON",
                owner=rec["owner"],
                source=rec["source"],
                utype=rec.get("utype") or "fact",
                content=rec["content"],
                from_ids=ids[:3],
                session_id=seg.messages[0].get("session_id"),
                turn=t,
                supersedes=superseded.get(rec["entry_id"]),
                valid_at=when,
                first_seen=when,
            )
        )
        if rec["entry_id"] in superseded:
            out[t][1].append((superseded[rec["entry_id"]], rec["entry_id"], when))
    return out


class StoreQAGain:
    """A :class:`speakerflow.training.reward.QAGain` over the real query path.

    ``questions`` maps network id to its qa_pairs; ``chat`` is required when the config's
    backend or judge is ``chat``. Networks without questions get a gain of 0.0.
    """

    def __init__(
        self,
        networks: Sequence[Network],
        questions: dict[str, list[dict[str, Any]]],
        config: QAGainConfig | None = None,
        chat: Any = None,
    ):
        self.config = config or QAGainConfig()
        if "chat" in (self.config.backend, self.config.judge) and chat is None:
            raise ValueError(
                "QAGainConfig asks for a chat model (backend or judge 'chat'); pass "
                "chat=<ChatBackend>"
            )
        self.chat = chat
        self.networks = {n.network_id: n for n in networks}
        self.questions = {
            nid: pick_questions(qs, self.config.max_questions) for nid, qs in questions.items()
        }
        self._s1_only: dict[str, float] = {}

    @classmethod
    def from_folder(
        cls, networks: Sequence[Network], config: QAGainConfig | None = None, chat: Any = None
    ) -> StoreQAGain:
        """Read each network's ``qa_pairs`` from its source file (trajectories have none)."""
        questions = {}
        for n in networks:
            src = Path(n.network_file) if n.network_file else None
            data = json.loads(src.read_text()) if src is not None and src.is_file() else {}
            questions[n.network_id] = list(data.get("qa_pairs") or [])
        return cls(networks, questions, config, chat)

    def _judge(self, question: dict[str, Any], answer: str) -> float:
        from speakerflow.ops.query.judge import llm_judge, token_f1

        if self.config.judge == "chat":
            return llm_judge(
                self.chat,
                question["question"],
                str(question["answer"]),
                answer,
                str(question.get("id", "")),
            ).value
        return token_f1(answer, str(question["answer"]))

    def _accuracy(self, network_id: str, state: WriterState | None, ablate: str | None) -> float:
        """Mean J over the network's questions on a fresh in-memory store holding its
        messages and (when ``state`` is given) the state's records."""
        from speakerflow.graphs import GroupStore
        from speakerflow.graphs.records import write_records
        from speakerflow.pipelines.query_path import QueryConfig, answer_question

        from .writer_eval import message_table

        net, qs = self.networks[network_id], self.questions[network_id]
        cfg = QueryConfig(embedder=self.config.embedder, backend=self.config.backend, ablate=ablate)
        with tempfile.TemporaryDirectory() as tmp:
            store = GroupStore(Path(tmp), network_id, in_memory=True)
            store.append_messages(message_table(net))
            for new, supersede in records_by_position(net, state) if state is not None else ():
                write_records(store, new, supersede)
            answers = [
                answer_question(store, q["question"], cfg, chat=self.chat).answer for q in qs
            ]
        return sum(self._judge(q, a) for q, a in zip(qs, answers, strict=True)) / len(qs)

    def accuracies(self, network_id: str, state: WriterState) -> tuple[float, float]:
        """(QA with System 1 + System 2 over ``state``, QA with System 1 only).

        System 1 only is answered on the messages alone (System 2 ablated, no records in
        the store), so it is the same for every state of a network and computed once:
        whatever the records add, through System 2 or by changing what System 1 finds,
        is credited to the Writer, and nothing verbatim memory answers alone is.
        """
        if not self.questions.get(network_id):
            return 0.0, 0.0
        if network_id not in self._s1_only:
            self._s1_only[network_id] = self._accuracy(network_id, None, "s2")
        return self._accuracy(network_id, state, None), self._s1_only[network_id]

    def __call__(self, network_id: str, state: WriterState) -> float:
        both, s1_only = self.accuracies(network_id, state)
        return both - s1_only
