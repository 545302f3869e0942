"""Forget a person, some messages or a whole group, and rebuild the group's wiki pages.

:func:`forget_group` is :func:`speakerflow.graphs.forget.forget` (every copy of the
messages, cascaded to records, facts, roster, caches; crash-safe) plus the copies made for
readers, removed (``<group>/snapshot/``, :data:`SNAPSHOT_DIRNAME`), and the wiki: pages
under ``<home>/wiki/<group>/`` (where the Dagster ``wiki_pages`` asset writes them) and
any folder passed in ``wiki_dirs`` are removed and rebuilt from what is left, so no page
keeps forgotten text.

>>> from speakerflow.graphs import GroupStore
>>> from speakerflow.ops.loaders import load
>>> from speakerflow.settings import BUNDLED_SAMPLE
>>> store = GroupStore("/unused", "sample", in_memory=True)
>>> _ = store.append_messages(load(BUNDLED_SAMPLE, "jsonl", group="sample")[0][1])
>>> r = forget_group(store, speaker="Dev")
>>> r.messages > 0, "Dev" in store.roster(), set(store.messages()["speaker"].to_pylist()) & {"Dev"}
(True, False, set())
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from speakerflow.graphs.forget import ForgetReport, forget

WIKI_DIRNAME = "wiki"
#: ``<group>/snapshot/``: the read snapshot a server's writer process publishes for its
#: reader processes (``speakerflow.server.replica``); a forget removes it (it is a copy of
#: the records and facts), and the writer publishes the group anew
SNAPSHOT_DIRNAME = "snapshot"


def default_wiki_dir(store: Any) -> Path | None:
    """``<home>/wiki/<group>`` of an on-disk store (``None`` in memory)."""
    return (
        None if store.in_memory else Path(store.root).parent.parent / WIKI_DIRNAME / store.group_id
    )


class AsOfWriter:
    """A Writer backend that shows a segment only the heads of its own time.

    Re-deriving after a forget writes *old* messages again (those that lost a record). The
    Writer normally sees the current heads, so an old message's record would become the
    newest state of a chain whose head rests on later messages (a May remark superseding
    an October record). This wrapper hides the heads whose latest evidence
    (``valid_at``) is after the segment's last message: what is re-derived continues only
    the chains that existed at its time, or stands alone; later states stay the heads.
    Validate still checks every action against the full segment.
    """

    def __init__(self, inner: Any):
        if isinstance(inner, str):
            from speakerflow.ops.write.writer.registry import make_writer

            inner = make_writer(inner)
        self.inner = inner
        self.name = f"{getattr(inner, 'name', 'writer')}@as-of"

    def propose(self, segment: Any) -> Any:
        from dataclasses import replace

        end = max(m["ts"] for m in segment.messages)
        heads = tuple(h for h in segment.heads if h.get("valid_at") is None or h["valid_at"] <= end)
        return self.inner.propose(replace(segment, heads=heads))


def forget_group(
    store: Any,
    speaker: str | None = None,
    message_ids: list[str] | None = None,
    everything: bool = False,
    dry_run: bool = False,
    wiki_dirs: Sequence[str | Path] = (),
    writer: Any = "rules",
    rederive: Literal["auto", "all", "affected"] = "auto",
) -> ForgetReport:
    """Forget in ``store`` (writable), re-derive records with ``writer`` (``None``/``"none"``
    leaves that to the next ingest), then rebuild the wiki folders that exist.

    ``rederive``: ``"all"`` deletes every record and writes the group's records again from
    the remaining messages, so the records are those of a group that never had the forgotten
    messages (nothing the Writer read from them in context survives either); ``"affected"``
    cascades (records resting only on, sourced by or quoting forgotten messages deleted,
    others trimmed) and re-derives only the remaining messages that lost a record;
    ``"auto"`` (default) is ``"all"`` when ``writer`` is the deterministic ``rules`` Writer
    and only it has written the group, else ``"affected"`` (a chat Writer's records are not
    rewritten by another Writer, nor re-bought from a model).

    Returns the :class:`~speakerflow.graphs.forget.ForgetReport`; ``records_rederived``
    counts the records written again, ``rewritten`` says whether every record was,
    ``wiki_rebuilt`` lists the folders rewritten.
    """
    from speakerflow.graphs.records import BACKENDS_KEY, WRITTEN_KEY

    # a Writer wrote the group before and one is given to write it again
    writes = bool(store.meta(WRITTEN_KEY, [])) and writer not in (None, "none")
    if rederive == "auto":
        rules_only = set(store.meta(BACKENDS_KEY, ["rules"])) <= {"rules"}
        rederive = "all" if writer == "rules" and rules_only else "affected"
    rewrite = rederive == "all" and writes
    report = forget(
        store,
        speaker=speaker,
        message_ids=message_ids,
        everything=everything,
        dry_run=dry_run,
        rewrite_records=rewrite,
    )
    report.records_rederived = 0  # type: ignore[attr-defined]
    report.rewritten = rewrite and not everything  # type: ignore[attr-defined]
    if not dry_run and report.rederive and writes:
        from speakerflow.pipelines.write_path import write_group

        report.records_rederived = write_group(  # type: ignore[attr-defined]
            store, writer if rewrite else AsOfWriter(writer), progress=False
        ).accepted
    dirs = [Path(d) for d in wiki_dirs]
    auto = default_wiki_dir(store)
    if auto is not None and auto.exists() and auto not in dirs:
        dirs.append(auto)
    rebuilt = []
    if not dry_run:
        from speakerflow.ops.knowledge.wiki import write_wiki

        if not store.in_memory:
            shutil.rmtree(Path(store.root) / SNAPSHOT_DIRNAME, ignore_errors=True)

        for d in dirs:
            if d.exists():
                for page in d.glob("*.md"):
                    page.unlink()
            write_wiki(store, d)
            rebuilt.append(str(d))
    report.wiki_rebuilt = rebuilt  # type: ignore[attr-defined]
    return report


__all__ = ["forget_group", "default_wiki_dir", "ForgetReport", "AsOfWriter"]
