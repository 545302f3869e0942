"""How often the grounding check (ops.write.contract.grounding) refuses the rules Writer's
own records.

Runs the rules Writer through the production write path (Writer >> Validate >> Upsert, in
memory) on the dev data -- LoCoMo conv-26, conv-30, conv-41, conv-42, conv-43 and the
SocialMemBench training networks -- and counts the proposals Validate refused for their
content (grounding) against those it wrote: the false-refusal rate, since the rules Writer
only restates the messages it cites. For a threshold sweep it recomputes the support of
every written record and every grounding refusal.

``python -m speakerflow.benchmarks.grounding [--out report.json]``
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from speakerflow.graphs import GroupStore
from speakerflow.graphs.records import all_records
from speakerflow.ops.loaders import load
from speakerflow.ops.write.grounding import MIN_SUPPORT, grounding
from speakerflow.pipelines.write_path import write_group

from .qa_data import LOCOMO_SPLITS

SHARED_DATA = Path(
    os.environ.get(
        "SPEAKERFLOW_SHARED_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"
    )
)
DEV_LOCOMO = LOCOMO_SPLITS["dev"]


def _inputs(data: Path) -> list[tuple[str, str, str]]:
    """(name, path, format) of the dev inputs."""
    out = []
    locomo = data / "locomo" / "locomo10.json"
    if locomo.exists():
        convs = [c for c in json.loads(locomo.read_text()) if c["sample_id"] in DEV_LOCOMO]
        tmp = Path(tempfile.mkdtemp()) / "locomo_dev.json"
        tmp.write_text(json.dumps(convs))
        out.append(("locomo-dev", str(tmp), "locomo"))
    for f in sorted((data / "socialmem" / "training").glob("social_grp_*.json")):
        out.append((f.stem, str(f), "socialmem"))
    return out


def _support(
    store: Any, rec: dict[str, Any], by_id: dict[str, Any], msgs: dict[str, Any], names: list[str]
):
    cited = [msgs[m] for m in rec["from_ids"] or [] if m in msgs]
    ev = [m["text"] for m in cited]
    if rec["supersedes"] in by_id:
        ev.append(by_id[rec["supersedes"]]["content"])
    return grounding(
        rec["content"],
        ev,
        [m["ts"] for m in cited],
        names,
        counts=(len(cited), len({m["session_id"] for m in cited})),
    )


def run(data: Path = SHARED_DATA) -> dict[str, Any]:
    written = refused = 0
    reasons: Counter[str] = Counter()
    supports: list[float] = []
    examples: list[dict[str, str]] = []
    per_input: dict[str, dict[str, int]] = {}
    for _name, path, fmt in _inputs(data):
        for gid, table in load(path, fmt):
            store = GroupStore(Path("/unused"), gid, in_memory=True)
            store.append_messages(table)
            rep = write_group(store, "rules", progress=False)
            grounded = [
                r
                for r in rep.rejects
                if str(r["reason"]).startswith("content: ")
                and "missing or empty" not in str(r["reason"])
            ]
            msgs = {m["msg_id"]: m for m in store.messages().to_pylist()}
            recs = all_records(store)
            by_id = {r["entry_id"]: r for r in recs}
            names = [*store.roster(), *(a for al in store.aliases().values() for a in al)]
            supports += [_support(store, r, by_id, msgs, names).support for r in recs]
            for r in grounded:
                why = str(r["reason"])
                reasons[
                    why.split(" ")[1]
                    if why.startswith("content: only")
                    else why.split("(")[0].strip()
                ] += 1
                if len(examples) < 20:
                    examples.append(
                        {"group": gid, "reason": why, "payload": str(r["payload"])[:300]}
                    )
            written += rep.accepted
            refused += len(grounded)
            per_input[gid] = {"written": rep.accepted, "refused_grounding": len(grounded)}
    total = written + refused
    sweep = {str(t): sum(s < t for s in supports) for t in (0.3, 0.4, 0.5, 0.6, 0.7)}
    return {
        "inputs": per_input,
        "written": written,
        "refused_grounding": refused,
        "false_refusal_rate": refused / total if total else 0.0,
        "min_support": MIN_SUPPORT,
        "refusal_reasons": dict(reasons),
        "examples": examples,
        "written_below_threshold_sweep": sweep,
        "records_scored": len(supports),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    rep = run()
    line = (
        f"rules Writer on the dev data: {rep['written']} records written, "
        f"{rep['refused_grounding']} refused "
        f"by the grounding check (false-refusal rate {rep['false_refusal_rate']:.2%}, "
        f"min_support {rep['min_support']}); reasons {rep['refusal_reasons']}"
    )
    print(line)
    if args.out:
        Path(args.out).write_text(json.dumps(rep, indent=1, default=str))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
