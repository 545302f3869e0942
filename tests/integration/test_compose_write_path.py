"""The write path composed by hand on a real store (Kuzu + Tantivy on disk):
``Segmenter() >> ForEach("segment_id", Writer >> Validate >> Upsert)`` with ``ctx.store`` the
group's GroupStore writes the same records as ``write_group``, and nothing on a second run."""

import pytest
from conftest import shared

from speakerflow.graphs.records import written_ids
from speakerflow.graphs.text_index import SearchFilter
from speakerflow.ops.core import ForEach
from speakerflow.ops.core.base import Context
from speakerflow.ops.loaders import load
from speakerflow.ops.write.segment import Segmenter
from speakerflow.ops.write.upsert import Upsert
from speakerflow.ops.write.validate import Validate
from speakerflow.ops.write.writer.operator import Writer
from speakerflow.pipelines.write_path import write_group
from speakerflow.settings import BUNDLED_SAMPLE

pytestmark = pytest.mark.timeout(180)
KEYS = ("entry_id", "layer", "owner", "source", "content", "supersedes")


def _keys(store):
    return {tuple(r[k] for k in KEYS) for r in store.records().to_pylist()}


def _table(case):
    if case == "sample":
        return load(BUNDLED_SAMPLE, "jsonl", group="team")[0]
    return load(shared("socialmem", "training", "social_grp_0d1e2f3a.json"), "socialmem")[0]


@pytest.mark.parametrize("case", ["sample", "socialmem"])
def test_composed_pipeline_on_a_real_store_equals_write_group(tmp_path, case):
    from speakerflow.graphs import Home

    gid, messages = _table(case)
    with Home(tmp_path / "composed").open(gid, writable=True) as store:
        store.append_messages(messages)
        pipe = Segmenter() >> ForEach("segment_id", Writer("rules") >> Validate() >> Upsert())
        out = pipe(store.messages(), Context(store=store))
        composed = _keys(store)
        assert out.num_rows == len(composed) > 0
        assert written_ids(store) == set(store.messages()["msg_id"].to_pylist())
        stats = pipe.stats()
        assert (
            stats["for_each_segment_id/writer"]["calls"]
            == stats["for_each_segment_id/upsert"]["calls"]
            > 1
        )
        # the records are in Tantivy too (searchable by owner)
        owner = out["owner"][0].as_py()
        assert store.search(
            out["content"][0].as_py(), k=50, flt=SearchFilter(kind="record", owner=owner)
        )
        # idempotent: a second run proposes and writes nothing
        again = Segmenter() >> ForEach("segment_id", Writer("rules") >> Validate() >> Upsert())
        assert again(store.messages(), Context(store=store)).num_rows == 0
        assert (
            again.stats()["for_each_segment_id/writer"]["skipped_written"]
            == store.messages().num_rows
        )
        assert _keys(store) == composed
    with Home(tmp_path / "reference").open(gid, writable=True) as store:
        store.append_messages(messages)
        report = write_group(store, "rules", progress=False)
        assert _keys(store) == composed and report.accepted == len(composed)
