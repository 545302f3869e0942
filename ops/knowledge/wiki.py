"""Wiki audit surface: one Markdown page per entity (assets, traders, people ...) and a group page.

Each entity page lists current facts (value, maturity, confidence, validity, evidence) and
the history: invalidated facts with their invalidation date and the fact that superseded
them, with provenance links to the raw records (``raw/<msg_id>`` anchors on the group page
carry source type, source ref, time and verbatim text). The group page lists entities, the
alias merge log and the maintenance log. Pages are rebuilt from the graph on each call.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from speakerflow.graphs.facts import FactGraph, FactItem
from speakerflow.ops.core.base import Context, Operator, OperatorConfig
from speakerflow.ops.core.registry import register
from speakerflow.ops.knowledge.load import load_knowledge


def _fmt(t) -> str:
    return "-" if t is None else f"{t:%Y-%m-%d %H:%M}"


def fact_line(fg: FactGraph, k: FactItem) -> str:
    """One audit line for a fact, with evidence links."""
    value = fg.entities[k.value].name if k.value in fg.entities else k.value
    ev = ", ".join(f"[{m}](index.md#raw-{m})" for m in k.evidence_ids)
    return (
        f"- **{k.relation.replace('_', ' ')}**: {value} ({k.maturity}, c={k.confidence:.2f}, "
        f"valid {_fmt(k.valid_at)}) evidence: {ev}"
    )


def entity_page_lines(fg: FactGraph, entity_id: str) -> tuple[list[FactItem], list[FactItem]]:
    """(current facts, invalidated facts) about ``entity_id``, newest first."""
    items = [fg.items[f] for f in fg.by_entity.get(entity_id, ())]
    items.sort(key=lambda k: k.valid_at, reverse=True)
    return [k for k in items if k.invalid_at is None], [
        k for k in items if k.invalid_at is not None
    ]


def page_name(entity_id: str) -> str:
    return entity_id.replace(":", "--").replace("/", "_") + ".md"


def render_entity(fg: FactGraph, entity_id: str) -> str:
    ent = fg.entities.get(entity_id)
    cur, old = entity_page_lines(fg, entity_id)
    out = [
        f"# {ent.name if ent else entity_id}",
        "",
        f"id `{entity_id}`, type {ent.etype if ent else '?'}; "
        f"aliases: {', '.join(ent.aliases) if ent and ent.aliases else '-'}",
        "",
        "## Current facts",
        "",
    ]
    out += [fact_line(fg, k) for k in cur] or ["- none"]
    out += ["", "## History (invalidated)", ""]
    for k in old:
        by = fg.items.get(k.superseded_by) if k.superseded_by else None
        out.append(
            fact_line(fg, k)
            + f"; invalid since {_fmt(k.invalid_at)}"
            + (f", superseded by `{by.edge_id}` ({by.value})" if by else "")
        )
    if not old:
        out.append("- none")
    links = sorted(
        {o for k in cur for o in (k.subject_id, k.object_id) if o != entity_id and o in fg.entities}
    )
    out += ["", "## Linked", ""] + [f"- [{fg.entities[e].name}]({page_name(e)})" for e in links]
    return "\n".join(out) + "\n"


def wiki_pages(store, knowledge: tuple | None = None) -> dict[str, str]:
    """The group's wiki as ``{file name: Markdown}``, ``index.md`` first: from ``store`` (a
    group store or a read snapshot: its messages, folder and roster) and its ``knowledge``
    (:func:`~speakerflow.ops.knowledge.load.load_knowledge`; loaded from ``store`` when not
    given)."""
    fg, _, _ = knowledge if knowledge is not None else load_knowledge(store)
    ents = sorted(e for e in fg.entities if fg.by_entity.get(e))
    pages = {page_name(e): render_entity(fg, e) for e in ents}
    index = [f"# Group {store.group_id}", "", "## Entities", ""]
    index += [
        f"- [{fg.entities[e].name}]({page_name(e)}) ({fg.entities[e].etype}, "
        f"{len(fg.by_entity[e])} facts)"
        for e in ents
    ]
    # the logs live in the group's folder: a disk store's, or a read snapshot's (in_memory
    # there only means its caches stay on the object); an in-memory store has none
    snapshot = store.in_memory and not getattr(store, "writable", True)
    root = Path(store.root) if snapshot or not store.in_memory else None
    for title, fname in (
        ("Merge log", "merge_log.jsonl"),
        ("Maintenance log", "maintenance_log.jsonl"),
    ):
        index += ["", f"## {title}", ""]
        f = root / fname if root else None
        rows = (
            [json.loads(x) for x in f.read_text().splitlines() if x.strip()]
            if f and f.exists()
            else []
        )
        index += [f"- `{json.dumps(r, default=str)}`" for r in rows[-200:]] or ["- none"]
    cited = {m for k in fg.items.values() for m in k.evidence_ids}
    index += ["", "## Raw records cited", ""]
    for r in store.messages().to_pylist():
        if r["msg_id"] in cited:
            index.append(
                f'- <a id="raw-{r["msg_id"]}"></a>`{r["msg_id"]}` {r["source_type"]} '
                f"{r.get('source_ref') or ''} "
                f"{_fmt(r['ts'])} {r['speaker']}: {r['text']}"
            )
    return {"index.md": "\n".join(index) + "\n", **pages}


def write_wiki(store, out_dir) -> list[Path]:
    """Write the group's wiki under ``out_dir``; returns the page paths (index.md first)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in wiki_pages(store).items():
        p = out / name
        p.write_text(text)
        paths.append(p)
    return paths


class WikiConfig(OperatorConfig):
    """``out_dir``: where the pages go (default ``<group>/wiki`` in the store's folder)."""

    out_dir: str | None = None


@register
class Wiki(Operator):
    """Any table (a trigger, e.g. the facts a run wrote) -> the group's wiki, rebuilt from its
    graph by :func:`write_wiki`: one row per page written (``page``: ``index`` or the entity's
    page name such as ``<type>--<id>``; ``path``). Stats: ``pages``."""

    name = "wiki"
    consumes = ()
    produces = pa.schema([("page", pa.string()), ("path", pa.string())])
    Config = WikiConfig
    config: WikiConfig

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        store = ctx.store
        if store is None:
            raise ValueError("Wiki needs ctx.store (a group store)")
        if self.config.out_dir is None and store.in_memory:
            raise ValueError("Wiki: an in-memory store has no folder; set out_dir")
        out = Path(self.config.out_dir) if self.config.out_dir else Path(store.root) / "wiki"
        paths = write_wiki(store, out)
        self.stats.bump("pages", len(paths))
        pages = ["index" if p.name == "index.md" else p.stem for p in paths]
        return pa.table({"page": pages, "path": [str(p) for p in paths]}, schema=self.produces)
