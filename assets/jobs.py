"""Jobs, the maintenance schedule and the inbox sensor.

Concurrency: a run covers one group (one partition), or in a backfill a range of up to
``BACKFILL_PARTITIONS_PER_RUN`` groups (the ingest assets' ``BackfillPolicy``, looped over
inside each step, one group's writer at a time). Inside a run the multiprocess
executor runs at most one store-writing step at a time (tag limit below); across runs,
steps of the same group queue on the group's writer lock (``HomeStore.open``), while
different groups run fully in parallel. A deployment can also queue whole runs per group
with the run coordinator (``docs/scaling.md``).
"""

import json
from typing import Any, Literal

import dagster as dg

from speakerflow.ops.loaders import LoadError
from speakerflow.pipelines import constants as C
from speakerflow.pipelines.resources import StoreResource

from .common import GROUPS
from .inbox import groups_of, inbox_files
from .partitions import missing_partitions

#: The multiprocess executor with one store writer per run at a time; steps start from a
#: forkserver that preloads the job's module (``speakerflow.assets.definitions``).
group_executor = dg.multiprocess_executor.configured(
    {
        "max_concurrent": C.MAX_CONCURRENT_STEPS,
        # steps fork from a server that imported the definitions once per run, instead of
        # each spawned step importing Dagster, Kuzu, Tantivy ... again (bench backfill)
        "start_method": {"forkserver": {}},
        "tag_concurrency_limits": [
            {"key": C.STORE_WRITE_TAG, "value": C.STORE_WRITE_VALUE, "limit": 1}
        ],
    },
    name="group_multiprocess",
)

INGEST_ASSETS = ["raw_messages", "verbatim_track", "writer_actions", "derived_memory"]

ingest_job = dg.define_asset_job(
    "ingest_job",
    selection=dg.AssetSelection.assets(*INGEST_ASSETS),
    executor_def=group_executor,
    description="One group (a backfill: up to 10 groups per run): read its messages, append the "
    "verbatim track, run the Writer, check the memory.",
)

knowledge_job = dg.define_asset_job(
    "knowledge_job",
    selection=dg.AssetSelection.assets("entity_graph", "wiki_pages"),
    executor_def=group_executor,
    description="One group: build the entity graph (InKH) and write its wiki pages.",
)

maintenance_job = dg.define_asset_job(
    "maintenance_job",
    selection=dg.AssetSelection.assets("maintenance_tick"),
    executor_def=group_executor,
    description="One group: decay, invalidation sweep, maintenance probes, review queue.",
)

evaluation_job = dg.define_asset_job(
    "evaluation_job",
    selection=dg.AssetSelection.groups("evaluation"),
    description="LoCoMo and SocialMemBench evaluation reports and the InKH harness benchmark.",
)

training_job = dg.define_asset_job(
    "training_job",
    selection=dg.AssetSelection.groups("training"),
    description="Writer SFT data set -> SFT -> GRPO -> ONNX export.",
)


class ForgetConfig(dg.Config):
    """What ``forget_job`` removes from one group: exactly one of ``speaker``,
    ``message_ids`` or ``all``; ``dry_run`` reports what would go and changes nothing."""

    group: str
    speaker: str | None = None
    message_ids: list[str] = []
    all: bool = False
    dry_run: bool = False
    writer: str = "rules"
    rederive: str = "auto"  # auto | all | affected (pipelines.forget.forget_group)


_REDERIVE: dict[str, Literal["auto", "all", "affected"]] = {
    "auto": "auto",
    "all": "all",
    "affected": "affected",
}


@dg.op(tags={C.STORE_WRITE_TAG: C.STORE_WRITE_VALUE})
def forget_op(context: dg.OpExecutionContext, config: ForgetConfig, store: StoreResource) -> dict:
    """:func:`speakerflow.pipelines.forget.forget_group` on ``config.group`` (writer lock held)."""
    from speakerflow.pipelines.forget import forget_group

    chosen = sum([bool(config.speaker), bool(config.message_ids), bool(config.all)])
    if chosen != 1:
        raise dg.Failure("forget_job: give exactly one of speaker, message_ids or all")
    if config.group not in store.groups():
        raise dg.Failure(f"forget_job: no group {config.group!r} in the store")
    if config.rederive not in _REDERIVE:
        raise dg.Failure(
            f"forget_job: rederive is one of {sorted(_REDERIVE)}, not {config.rederive!r}"
        )
    with store.open(config.group, write=True) as gs:
        report = forget_group(
            gs,
            speaker=config.speaker or None,
            message_ids=list(config.message_ids) or None,
            everything=config.all,
            dry_run=config.dry_run,
            writer=config.writer,
            rederive=_REDERIVE[config.rederive],
        )
    # counts only: the output (pickled by the IO manager) and its metadata never carry the
    # forgotten names or text
    out = {
        **report.as_dict(),
        "roster_removed": len(report.roster_removed),
        "records_rederived": getattr(report, "records_rederived", 0),
        "rewritten": getattr(report, "rewritten", False),
        "wiki_rebuilt": len(getattr(report, "wiki_rebuilt", [])),
    }
    context.add_output_metadata({k: v for k, v in out.items() if isinstance(v, int | bool)})
    return out


@dg.job(
    description="Forget a speaker, some messages or a whole group (every copy, cascaded; see "
    "docs/reliability.md)."
)
def forget_job():
    forget_op()


@dg.schedule(
    job=maintenance_job,
    cron_schedule=C.MAINTENANCE_CRON,
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.STOPPED,
)
def maintenance_schedule(context: dg.ScheduleEvaluationContext):
    """Every day: one maintenance run per group."""
    groups = context.instance.get_dynamic_partitions(C.GROUPS_PARTITION)
    if not groups:
        return dg.SkipReason("no groups yet: nothing to maintain")
    day = context.scheduled_execution_time.strftime("%Y-%m-%d")
    return [
        dg.RunRequest(
            run_key=f"maintenance:{g}:{day}",
            partition_key=g,
            run_config={
                "ops": {
                    "maintenance_tick": {
                        "config": {"now": context.scheduled_execution_time.isoformat()}
                    }
                }
            },
        )
        for g in groups
    ]


def inbox_requests(
    store: StoreResource, cursor: str | None, known: set[str], log=None, sync_store: bool = False
) -> dg.SensorResult:
    """What the inbox sensor asks for: new partitions, one ingest run per (new file, group).

    ``cursor`` maps each file seen to its stamp (mtime and size), so a rewritten file is
    picked up again; a file that fails to load is logged and remembered, not retried
    until it changes. With ``sync_store`` the store's groups that are not partitions yet
    (ingested by the CLI or the API without ``DAGSTER_HOME``) are added as partitions too,
    without a run: their data is already stored.
    """
    seen: dict[str, str] = json.loads(cursor) if cursor else {}
    requests: list[dg.RunRequest] = []
    for item in inbox_files(store.inbox()):
        key, stamp = str(item.path), item.stamp
        if seen.get(key) == stamp:
            continue
        seen[key] = stamp
        try:
            groups = groups_of(item)
        except LoadError as exc:
            if log is not None:
                log.warning(f"inbox: skipped {key}: {exc}")
            continue
        for group in groups:
            requests.append(
                dg.RunRequest(
                    run_key=f"{key}@{stamp}#{group}",
                    partition_key=group,
                    run_config={
                        "ops": {"raw_messages": {"config": {"path": key, "fmt": item.fmt}}}
                    },
                    tags={"speakerflow/source": item.path.name},
                )
            )
    wanted = {r.partition_key for r in requests if r.partition_key is not None}
    if sync_store:
        wanted |= set(store.groups())
    new_groups = missing_partitions(wanted, known)
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[GROUPS.build_add_request(new_groups)] if new_groups else [],
        cursor=json.dumps(seen, sort_keys=True),
    )


@dg.sensor(
    job=ingest_job,
    minimum_interval_seconds=C.INBOX_SENSOR_INTERVAL_S,
    default_status=dg.DefaultSensorStatus.STOPPED,
)
def inbox_sensor(context: dg.SensorEvaluationContext, store: StoreResource) -> dg.SensorResult:
    """A new or changed message file in the inbox: add its groups as partitions and ingest
    them; groups already in the store (CLI or API ingests) become partitions too."""
    known = set(context.instance.get_dynamic_partitions(C.GROUPS_PARTITION))
    return inbox_requests(store, context.cursor, known, context.log, sync_store=True)


jobs: list[Any] = [
    ingest_job,
    knowledge_job,
    maintenance_job,
    evaluation_job,
    training_job,
    forget_job,
]
schedules = [maintenance_schedule]
sensors = [inbox_sensor]
