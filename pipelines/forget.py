"""Forget a person, some messages or a whole group, and rebuild the group's wiki pages.

:func:`forget_group` is :func:`speakerflow.graphs.forget.forget` (every copy of the
messages, cascaded to records, facts, roster, caches; crash-safe) plus the wiki: pages
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

from pathlib import Path
from typing import Any

from speakerflow.graphs.forget import ForgetReport, forget

WIKI_DIRNAME = "wiki"


def default_wiki_dir(store: Any) -> Path | None:
    """``<home>/wiki/<group>`` of an on-disk store (``None`` in memory)."""
    return None if store.in_memory else Path(store.root).parent.parent / WIKI_DIRNAME / store.group_id


def forget_group(store: Any, speaker: str | None = None, message_ids: list[str] | None = None,
                 everything: bool = False, dry_run: bool = False,
                 wiki_dirs: list[str | Path] = (), writer: Any = "rules") -> ForgetReport:
    """Forget in ``store`` (writable), re-derive the remaining messages that lost a record
    (with ``writer``; ``None``/``"none"`` leaves that to the next ingest), then rebuild
    the wiki folders that exist.

    Returns the :class:`~speakerflow.graphs.forget.ForgetReport`; ``records_rederived``
    counts the records written again, ``wiki_rebuilt`` lists the folders rewritten.
    """
    from speakerflow.graphs.records import WRITTEN_KEY

    had_writer = bool(store.meta(WRITTEN_KEY, []))
    report = forget(store, speaker=speaker, message_ids=message_ids, everything=everything, dry_run=dry_run)
    report.records_rederived = 0  # type: ignore[attr-defined]
    if not dry_run and report.rederive and had_writer and writer not in (None, "none"):
        from speakerflow.pipelines.write_path import write_group

        report.records_rederived = write_group(store, writer, progress=False).accepted  # type: ignore[attr-defined]
    dirs = [Path(d) for d in wiki_dirs]
    auto = default_wiki_dir(store)
    if auto is not None and auto.exists() and auto not in dirs:
        dirs.append(auto)
    rebuilt = []
    if not dry_run:
        from speakerflow.ops.wiki import write_wiki

        for d in dirs:
            if d.exists():
                for page in d.glob("*.md"):
                    page.unlink()
            write_wiki(store, d)
            rebuilt.append(str(d))
    report.wiki_rebuilt = rebuilt  # type: ignore[attr-defined]
    return report


__all__ = ["forget_group", "default_wiki_dir", "ForgetReport"]
