"""Defaults of the Dagster layer, in one place (asset configs and resources read them here).

Nothing here is a secret; secrets (API keys) only ever come from the environment through
``dg.EnvVar`` when a resource is used.
"""

from __future__ import annotations

from speakerflow.graphs.home import INBOX_DIRNAME  # noqa: F401 - one name for <home>/inbox
from speakerflow.settings import env_name, setting

#: Name of the dynamic partitions definition: one partition per group id.
GROUPS_PARTITION = "groups"
#: Subfolder of the store home where the Parquet IO manager keeps asset tables.
IO_DIRNAME = "dagster-io"
#: Subfolder of the store home for wiki pages (``<home>/wiki/<group>/``).
WIKI_DIRNAME = "wiki"
#: Subfolder of the store home for evaluation/benchmark reports and their plots.
REPORTS_DIRNAME = "reports"
#: Subfolder of the store home for Writer training artefacts.
TRAINING_DIRNAME = "training"
#: Message window of the Writer (messages per writing segment).
WRITER_WINDOW = 25
#: Input formats the inbox understands (a sub-folder of the inbox named after one of them).
INBOX_FORMATS = ("jsonl", "locomo", "socialmem", "events")
#: File suffixes the inbox picks up.
INBOX_SUFFIXES = (".json", ".jsonl")
#: Seconds between two inbox scans.
INBOX_SENSOR_INTERVAL_S = 30
#: Maintenance schedule (cron, UTC): every day at 03:00.
MAINTENANCE_CRON = "0 3 * * *"
#: How long a step waits for another process to release a group's writer lock (seconds).
WRITE_LOCK_WAIT_S = 600.0
#: Op tag that marks a step as a writer of one group's store; the multiprocess executor
#: runs at most one such step of a run at a time (per-group write serialisation in a run).
STORE_WRITE_TAG = "speakerflow/store"
STORE_WRITE_VALUE = "group-write"
#: At most this many steps of one run in parallel on the multiprocess executor.
MAX_CONCURRENT_STEPS = 4
#: Rows shown in Markdown previews in the UI.
PREVIEW_ROWS = 8

#: The shared data folder (LoCoMo, SocialMemBench); ``$SPEAKERFLOW_SHARED_DATA`` overrides.
SHARED_DATA = setting("shared_data")
LOCOMO_PATH = str(SHARED_DATA / "locomo" / "locomo10.json")
SOCIALMEM_PATH = str(SHARED_DATA / "socialmem" / "training")
SOCIALMEM_TEACHER_PATH = str(SHARED_DATA / "socialmem" / "teacher")
#: Environment variable holding the OpenAI-compatible API key (read only when used).
OPENAI_KEY_ENV = env_name("openai_api_key")
