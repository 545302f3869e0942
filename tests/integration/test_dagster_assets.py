"""The assets materialised for real (in-process executor, real Kuzu/Tantivy store):
the whole group chain with its metadata and checks, a custom operator pipeline through the
factory, and the Writer training chain on the tiny model."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pytest

from speakerflow.assets import ingestion, knowledge, maintenance, memory, training
from speakerflow.assets.factory import pipeline_assets, read_output
from speakerflow.ops import Lambda
from speakerflow.pipelines.resources import HomeStore, ParquetIOManager, ScriptedChatModel
from speakerflow.settings import BUNDLED_SAMPLE

REPO = Path(__file__).resolve().parents[2]
SOCIALMEM = REPO.parent / "shared" / "data" / "socialmem"
pytestmark = pytest.mark.timeout(300)
GROUP_ASSETS = [
    ingestion.raw_messages,
    ingestion.verbatim_track,
    memory.writer_actions,
    memory.derived_memory,
    knowledge.entity_graph,
    knowledge.wiki_pages,
    maintenance.maintenance_tick,
]


@pytest.fixture
def env(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / "inbox").mkdir(parents=True)
    shutil.copy(BUNDLED_SAMPLE, home / "inbox" / "team.jsonl")
    monkeypatch.setenv("SPEAKERFLOW_HOME", str(home))
    resources = {
        "store": HomeStore(home=str(home)),
        "chat_model": ScriptedChatModel(),
        "table_io": ParquetIOManager(base_dir=str(tmp_path / "io")),
    }
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("groups", ["team"])
        yield {"home": home, "resources": resources, "instance": instance}


def _meta(result: dg.ExecuteInProcessResult, asset: str) -> dict:
    (mat,) = [m for m in result.asset_materializations_for_node(asset)]
    return {k: v.value for k, v in mat.metadata.items()}


def test_group_chain_materialises_with_metadata_and_checks(env):
    result = dg.materialize(
        GROUP_ASSETS, partition_key="team", instance=env["instance"], resources=env["resources"]
    )
    assert result.success
    raw = _meta(result, "raw_messages")
    assert raw["rows"] == 32 and raw["speakers"] == 4 and "Ana" in raw["preview"]
    track = _meta(result, "verbatim_track")
    assert track["added"] == 32 and track["skipped"] == 0
    writer = _meta(result, "writer_actions")
    assert (
        writer["writer"] == "ScriptedChatModel"
        and writer["accepted"] > 0
        and writer["proposed"] >= writer["accepted"]
    )
    assert writer["model_calls"] == 0 and writer["tokens"] == 0  # the rules Writer calls no model
    mem = _meta(result, "derived_memory")
    assert (
        mem["rows"] > 0
        and mem["updates"] > 0
        and set(mem["records_by_layer"])
        <= {"per_speaker_core", "per_speaker_profile", "group_interaction", "group_insight"}
    )
    assert sum(mem["records_by_layer"].values()) == mem["rows"]
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert len(checks) == 5 and all(checks.values()), checks
    assert _meta(result, "wiki_pages")["pages"] > 0
    assert "seconds" in _meta(result, "entity_graph") and "seconds" in _meta(
        result, "maintenance_tick"
    )
    with env["resources"]["store"].open("team") as store:
        assert store.messages().num_rows == 32 and store.records().num_rows == mem["rows"]

    # a second run adds nothing twice
    again = dg.materialize(
        GROUP_ASSETS[:4], partition_key="team", instance=env["instance"], resources=env["resources"]
    )
    assert (
        _meta(again, "verbatim_track")["added"] == 0
        and _meta(again, "derived_memory")["rows"] == mem["rows"]
    )


def test_raw_messages_names_the_broken_line(env):
    (env["home"] / "inbox" / "team.jsonl").write_text(
        '{"msg_id": "m1", "speaker": "Ana", "text": "hi"\n'
    )
    result = dg.materialize(
        [ingestion.raw_messages],
        partition_key="team",
        instance=env["instance"],
        resources=env["resources"],
        raise_on_error=False,
    )
    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    assert "team.jsonl: line 1" in failure.step_failure_data.error.message


def test_custom_pipeline_factory(env, tmp_path):
    """A user's own source (a CSV of support tickets) >> two operators, as group-partitioned
    assets with each operator's stats as metadata."""
    tickets = tmp_path / "tickets.csv"
    tickets.write_text(
        "id,who,text\nt1,Ana,Refund please\nt2,Ben,  app crashes on login \nt3,Ana,refund again\n"
    )

    def source(store):
        import pyarrow.csv as pcsv

        table = pcsv.read_csv(tickets)
        return table.append_column("group_id", pa.array([store.group_id] * table.num_rows))

    text = pa.schema([("id", pa.string()), ("who", pa.string()), ("text", pa.string())])
    clean = Lambda(
        lambda t, c: t.set_column(
            2, "text", pa.array([s.strip().lower() for s in t["text"].to_pylist()])
        ),
        name="clean",
        consumes=("text",),
        produces=text,
    )

    def tag(t, ctx):
        ctx.state["rejects"] = t.filter(pa.compute.equal(t["text"], "refund please"))
        return t.append_column(
            "topic", pa.array(["refund" if "refund" in s else "bug" for s in t["text"].to_pylist()])
        )

    tagger = Lambda(
        tag, name="tag", consumes=("text",), produces=text.append(pa.field("topic", pa.string()))
    )
    assets = pipeline_assets("tickets", clean >> tagger, source=source, deps=())
    assert sorted(k.to_user_string() for k in assets.keys) == ["tickets/clean", "tickets/tag"]

    # the store must exist (read-only open): ingest the group first
    assert dg.materialize(
        GROUP_ASSETS[:2], partition_key="team", instance=env["instance"], resources=env["resources"]
    ).success
    result = dg.materialize(
        [assets], partition_key="team", instance=env["instance"], resources=env["resources"]
    )
    assert result.success
    mats = {
        m.asset_key.to_user_string(): {k: v.value for k, v in m.metadata.items()}
        for m in result.asset_materializations_for_node("tickets_pipeline")
    }
    assert mats["tickets/clean"]["rows_in"] == 3 and mats["tickets/clean"]["calls"] == 1
    assert mats["tickets/tag"]["rows_out"] == 3 and mats["tickets/tag"]["reject_rows"] == 1
    out = read_output(env["resources"]["store"], "tickets", "team")
    assert out["topic"].to_pylist() == ["refund", "bug", "refund"]


def test_custom_pipeline_example_from_the_docs(env):
    """docs/custom-pipelines.md: my own source >> Detect >> Canonicalize >> Segmenter >>
    ForEach(segment: Writer >> Validate >> Upsert) writes what write_group writes."""
    from speakerflow.assets.custom_example import SOURCE_DIRNAME, my_memory
    from speakerflow.graphs import GroupStore
    from speakerflow.ops.loaders import load
    from speakerflow.pipelines.write_path import write_group

    (env["home"] / SOURCE_DIRNAME).mkdir()
    shutil.copy(BUNDLED_SAMPLE, env["home"] / SOURCE_DIRNAME / "team.jsonl")
    result = dg.materialize(
        [my_memory], partition_key="team", instance=env["instance"], resources=env["resources"]
    )
    assert result.success
    mats = {
        m.asset_key.to_user_string(): {k: v.value for k, v in m.metadata.items()}
        for m in result.asset_materializations_for_node("my_memory_pipeline")
    }
    assert list(mats) == [
        "my_memory/detect",
        "my_memory/canonicalize",
        "my_memory/segment",
        "my_memory/for_each_segment_id",
    ]
    assert mats["my_memory/detect"]["rows_in"] == 32 and mats["my_memory/detect"]["mentions"] > 0
    assert mats["my_memory/segment"]["rows_out"] == 32
    each = mats["my_memory/for_each_segment_id"]
    assert each["rows_out"] > 0 and each["reject_rows"] == each["validate/rejects"] == 0
    assert each["writer/calls"] == each["upsert/calls"] >= 1 and each["writer/rows_in"] == 32
    assert each["validate/accepted"] == each["rows_out"] and each["upsert/updates"] > 0
    with env["resources"]["store"].open("team") as store:
        records = store.records()
    assert records.num_rows == each["rows_out"]

    # the same records as the write path run by write_group
    reference = GroupStore("/unused", "team", in_memory=True)
    reference.append_messages(load(BUNDLED_SAMPLE, "jsonl", group="team")[0][1])
    write_group(reference, "rules", progress=False)
    keys = ["entry_id", "layer", "owner", "source", "content", "supersedes"]
    assert {tuple(r[k] for k in keys) for r in records.select(keys).to_pylist()} == {
        tuple(r[k] for k in keys) for r in reference.records().select(keys).to_pylist()
    }

    # a second run writes nothing new (the Writer skips the watermark)
    again = dg.materialize(
        [my_memory], partition_key="team", instance=env["instance"], resources=env["resources"]
    )
    meta = {
        m.asset_key.to_user_string(): {k: v.value for k, v in m.metadata.items()}
        for m in again.asset_materializations_for_node("my_memory_pipeline")
    }["my_memory/for_each_segment_id"]
    assert (
        meta["rows_out"] == 0
        and meta["writer/skipped_written"] == 32
        and meta["writer/model_calls"] == 0
    )
    with env["resources"]["store"].open("team") as store:
        assert store.records().num_rows == records.num_rows


@pytest.mark.slow
def test_training_chain_on_the_tiny_model(env, tmp_path):
    network = SOCIALMEM / "training" / "social_grp_0d1e2f3a.json"
    if not network.exists():
        pytest.skip(f"{network} is absent")
    data, teacher = tmp_path / "data", tmp_path / "teacher"
    data.mkdir(), teacher.mkdir()
    shutil.copy(network, data)
    shutil.copy(SOCIALMEM / "teacher" / "grp_0d1e2f3a.json", teacher)
    cfg = {
        "data": str(data),
        "teacher": str(teacher),
        "steps": 1,
        "group_size": 2,
        "max_new_tokens": 8,
    }
    run_config = {
        "ops": {
            name: {"config": cfg}
            for name in ("writer_sft_dataset", "writer_sft_checkpoint", "writer_grpo_checkpoint")
        }
    }
    result = dg.materialize(
        [
            training.writer_sft_dataset,
            training.writer_sft_checkpoint,
            training.writer_grpo_checkpoint,
            training.writer_onnx,
        ],
        instance=env["instance"],
        resources=env["resources"],
        run_config=run_config,
    )
    assert result.success
    assert _meta(result, "writer_sft_dataset")["pairs"] > 0
    assert _meta(result, "writer_sft_checkpoint")["steps"] == 1
    onnx = _meta(result, "writer_onnx")
    assert onnx["max_abs_logit_diff"] < 1e-3 and onnx["onnx_bytes"] > 0
    assert (env["home"] / "training" / "writer_onnx" / "model.onnx").is_file()


@pytest.mark.slow
def test_evaluation_reports_show_their_plots(env, tmp_path):
    from speakerflow.assets import evaluation

    network = SOCIALMEM / "training" / "social_grp_0d1e2f3a.json"
    if not network.exists():
        pytest.skip(f"{network} is absent")
    data = tmp_path / "nets"
    data.mkdir()
    shutil.copy(network, data)
    run_config = {
        "ops": {
            "socialmem_eval_report": {
                "config": {"data": str(data), "embedder": "hashing", "limit": 6}
            },
            "harness_report": {"config": {"seeds": 2, "episodes": 30, "injection_edges": 0}},
        }
    }
    result = dg.materialize(
        [evaluation.socialmem_eval_report, evaluation.harness_report],
        instance=env["instance"],
        resources=env["resources"],
        run_config=run_config,
    )
    assert result.success
    ev = _meta(result, "socialmem_eval_report")
    assert ev["plot"].startswith("![evidence recall@k per system](data:image/png;base64,")
    assert any(k.startswith("bm25/") for k in ev) and any(k.startswith("speakerflow/") for k in ev)
    assert Path(ev["plot_path"]).is_file()
    harness = _meta(result, "harness_report")
    assert "data:image/png;base64," in harness["plot"] and harness["seconds"] > 0


def test_inbox_sensor_request_runs_ingest_job(env):
    """A file dropped in the inbox: the sensor's request, launched as is, ingests its group."""
    from speakerflow.assets.definitions import defs
    from speakerflow.assets.jobs import inbox_sensor

    (env["home"] / "inbox" / "socialmem").mkdir()
    network = SOCIALMEM / "training" / "social_grp_0d1e2f3a.json"
    if network.exists():
        shutil.copy(network, env["home"] / "inbox" / "socialmem")
    result = inbox_sensor(
        dg.build_sensor_context(instance=env["instance"], resources=env["resources"])
    )
    requests = {r.partition_key: r for r in result.run_requests}
    assert "team" in requests and (not network.exists() or "grp_0d1e2f3a" in requests)
    env["instance"].add_dynamic_partitions("groups", sorted(requests))
    job = defs.resolve_job_def("ingest_job")
    for group, request in requests.items():
        run = job.execute_in_process(
            run_config=request.run_config,
            partition_key=group,
            instance=env["instance"],
            tags=request.tags,
        )
        assert run.success
        with env["resources"]["store"].open(group) as store:
            assert store.messages().num_rows > 0 and store.records().num_rows > 0


def test_inkh_pipeline_example_from_the_docs(env, tmp_path):
    """docs/custom-pipelines.md: my events >> Detect >> Canonicalize >> ExtractKnowledge >>
    Invalidate >> Decay >> Govern as six assets writes the graph build_entity_graph writes."""
    import speakerflow
    from speakerflow.assets.knowledge_example import EVENTS_DIRNAME, my_knowledge
    from speakerflow.graphs import Home
    from speakerflow.graphs.facts import FactGraph
    from speakerflow.ops.loaders import load
    from speakerflow.pipelines.entity_path import build_entity_graph

    sample = Path(speakerflow.__file__).parent / "data" / "sample_events.jsonl"
    (env["home"] / EVENTS_DIRNAME).mkdir()
    shutil.copy(sample, env["home"] / EVENTS_DIRNAME / "desk.jsonl")
    env["instance"].add_dynamic_partitions("groups", ["desk"])
    result = dg.materialize(
        [my_knowledge], partition_key="desk", instance=env["instance"], resources=env["resources"]
    )
    assert result.success
    mats = {
        m.asset_key.to_user_string(): {k: v.value for k, v in m.metadata.items()}
        for m in result.asset_materializations_for_node("my_knowledge_pipeline")
    }
    assert list(mats) == [
        f"my_knowledge/{s}"
        for s in ("detect", "canonicalize", "extract_knowledge", "invalidate", "decay", "govern")
    ]
    assert (
        mats["my_knowledge/detect"]["rows_in"] == 8 and mats["my_knowledge/detect"]["mentions"] > 0
    )
    inv = mats["my_knowledge/invalidate"]
    assert inv["added"] > 5 and inv["invalidated"] >= 1 and inv["writes"] > 0
    assert mats["my_knowledge/decay"]["rows_out"] == inv["rows_out"]
    gov = mats["my_knowledge/govern"]
    assert (
        gov["refused_maturity"] + gov["refused_confidence"] + gov["refused_scope"] > 0
    )  # high risk refuses some

    reference = Home(tmp_path / "ref").open("desk", writable=True)
    reference.append_messages(load(sample, "events", group="desk")[0][1])
    build_entity_graph(reference)
    with env["resources"]["store"].open("desk") as store:
        mine = FactGraph(store.graph, "desk").load(with_records=False)
    ref = FactGraph(reference.graph, "desk").load(with_records=False)
    keys = (
        "subject_id",
        "relation",
        "object_id",
        "invalid_at",
        "maturity",
        "confidence",
        "evidence_ids",
    )
    assert {e: tuple(getattr(k, a) for a in keys) for e, k in mine.items.items()} == {
        e: tuple(getattr(k, a) for a in keys) for e, k in ref.items.items()
    }
    reference.close()

    again = dg.materialize(
        [my_knowledge], partition_key="desk", instance=env["instance"], resources=env["resources"]
    )
    meta = {
        m.asset_key.to_user_string(): {k: v.value for k, v in m.metadata.items()}
        for m in again.asset_materializations_for_node("my_knowledge_pipeline")
    }["my_knowledge/invalidate"]
    assert (
        meta["added"] == 0 and meta["invalidated"] == 0
    )  # a rerun adds nothing (fact ids are content ids)
