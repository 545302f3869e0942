"""Every ``SPEAKERFLOW_*`` environment variable in one typed object, with its default and its
meaning (never secrets here: a key is read from the environment, not kept in code).

:class:`Settings` (pydantic-settings) is the one definition: ``Settings()`` reads them all
now. Code that runs per call and must see a variable changed at run time (tests, benchmarks
that switch a threshold between runs) reads one field with :func:`setting`, which parses
exactly as ``Settings()`` would, without building the whole object. docs/settings.md lists
them (``tests/unit/test_settings.py`` checks the list against this class).

>>> import os
>>> os.environ["SPEAKERFLOW_LOCK_WAIT"] = "2.5"
>>> setting("lock_wait"), Settings().lock_wait
(2.5, 2.5)
>>> del os.environ["SPEAKERFLOW_LOCK_WAIT"]
>>> setting("lock_wait")
0.0
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import AliasChoices, Field, SecretStr, TypeAdapter
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_HOME = ".speakerflow"
PREFIX = "SPEAKERFLOW_"
BUNDLED_SAMPLE = Path(__file__).parent / "data" / "sample_team.jsonl"
#: ``<repo>/../shared/data`` for a source checkout (the default of ``shared_data``)
_SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def _either(name: str) -> AliasChoices:
    """A variable read as ``SPEAKERFLOW_<name>``, else as the plain ``<name>``."""
    return AliasChoices(PREFIX + name, name)


class Settings(BaseSettings):
    """The environment of speakerflow. Each field is ``SPEAKERFLOW_<FIELD NAME>`` unless its
    ``validation_alias`` says otherwise."""

    model_config = SettingsConfigDict(env_prefix=PREFIX, extra="ignore", frozen=True)

    # -- stores ---------------------------------------------------------------------------
    home: Path | None = Field(
        None, description="The store home when no --home is given (default ./.speakerflow)."
    )
    lock_wait: float = Field(
        0.0, ge=0, description="Seconds a writer waits for a group another process writes."
    )
    index_keep_writer: bool = Field(
        True,
        description="A writable store keeps one Tantivy writer until it closes (merges in the "
        "background of the next appends); 0: one writer per commit, waiting for its merges.",
    )
    index_threads: int | None = Field(
        None, ge=1, description="Indexing threads of a Tantivy writer (default: cores/2, 1-4)."
    )
    ann_threshold: int = Field(
        20_000,
        ge=1,
        description="Messages from which a group's dense recall uses the FAISS HNSW index "
        "(read when speakerflow.graphs.ann is imported).",
    )
    # -- query path -----------------------------------------------------------------------
    bounded_recall_above: int | None = Field(
        None,
        ge=0,
        description="Messages above which recall takes the bounded path (default: "
        "ops/query/recall_bounded.BOUNDED_ABOVE).",
    )
    bm25_cap: int | None = Field(
        None,
        ge=1,
        description="BM25 hits the bounded path reads per question (default: "
        "ops/query/recall_bounded.BM25_CAP).",
    )
    # -- embedders and models -------------------------------------------------------------
    embedder_precision: str | None = Field(
        None,
        description="MiniLM precision: fp32 (ONNX, the default), int8 (ONNX) or torch.",
    )
    embed_threads: int = Field(
        0, ge=0, description="onnxruntime intra-op threads of MiniLM (0: onnxruntime's own)."
    )
    model_cache: Path | None = Field(
        None,
        description="Where converted models are cached (default "
        "$XDG_CACHE_HOME/speakerflow/models, else ~/.cache/speakerflow/models).",
    )
    ingest_embedder: str = Field(
        "minilm", description="The default of speakerflow ingest --embedder."
    )
    writer_backend: str | None = Field(
        None,
        description="The Writer backend of the Dagster assets (default rules; the CLI has "
        "--writer).",
    )
    # -- InKH -----------------------------------------------------------------------------
    domain: str | None = Field(
        None,
        description="The domain pack a new group is ingested with (a bundled pack's name or "
        "a pack folder; default the bundled trading pack).",
    )
    # -- chat backends and serving --------------------------------------------------------
    openai_api_key: SecretStr | None = Field(
        None,
        validation_alias=_either("OPENAI_API_KEY"),
        description="Key of the OpenAI-compatible chat backend (else $OPENAI_API_KEY).",
    )
    openai_base_url: str | None = Field(
        None,
        validation_alias=_either("OPENAI_BASE_URL"),
        description="Its URL (else $OPENAI_BASE_URL, else https://api.openai.com/v1).",
    )
    openai_model: str | None = Field(
        None,
        validation_alias=_either("OPENAI_MODEL"),
        description="Its model name (else $OPENAI_MODEL).",
    )
    api_keys: SecretStr | None = Field(
        None,
        description='speakerflow serve: the API keys and their groups, JSON {"key": ["group", '
        '...]} (a key with ["*"] may use every group).',
    )
    # -- Dagster and evaluation -----------------------------------------------------------
    shared_data: Path = Field(
        _SHARED, description="The shared data sets (LoCoMo, SocialMemBench) of the eval assets."
    )
    celery_broker: str = Field(
        "redis://127.0.0.1:6379/0", description="Broker of the Celery code location."
    )
    celery_backend: str = Field(
        "redis://127.0.0.1:6379/1", description="Result backend of the Celery code location."
    )
    backfill_partitions_per_run: int | None = Field(
        None,
        ge=1,
        description="Groups per run of a Dagster backfill of the ingest assets (default 10).",
    )
    # -- fault injection (tests and benchmarks/faults.py) ---------------------------------
    failpoint: str | None = Field(
        None,
        description="name[@n]: the failpoint (its n-th pass, default the first) where a store "
        "write kills its process (graphs/batch.py): what the crash tests set in a child.",
    )
    failpoint_action: str | None = Field(
        None, description="pause: a failpoint waits instead of killing the process."
    )
    failpoint_log: Path | None = Field(
        None, description="A file each failpoint passed is noted in."
    )


@cache
def _adapter(name: str) -> tuple[TypeAdapter, tuple[str, ...], Any]:
    info = Settings.model_fields[name]
    alias = info.validation_alias
    annotation: Any = (
        Annotated[info.annotation, *info.metadata] if info.metadata else info.annotation
    )
    names = (
        tuple(str(a) for a in alias.choices)
        if isinstance(alias, AliasChoices)
        else ((PREFIX + name).upper(),)
    )
    return TypeAdapter(annotation), names, info.get_default(call_default_factory=True)


def env_name(name: str) -> str:
    """The environment variable of the field ``name`` (the first one read)."""
    return _adapter(name)[1][0]


def setting(name: str) -> Any:
    """The field ``name`` of :class:`Settings` as the environment holds it now (its default
    when unset); a bad value raises pydantic's ValidationError naming the variable."""
    adapter, names, default = _adapter(name)
    for env in names:
        raw = (os.environ.get(env) or "").strip()
        if raw:
            try:
                return adapter.validate_strings(raw)
            except Exception as exc:
                raise ValueError(f"${env}={raw!r}: {exc}") from None
    return default


def model_cache_dir() -> Path:
    """Where converted models are cached (exports, quantisations, GGUF conversions: built
    once, never downloaded): ``$SPEAKERFLOW_MODEL_CACHE``, else
    ``$XDG_CACHE_HOME/speakerflow/models``, else ``~/.cache/speakerflow/models``."""
    configured = setting("model_cache")
    if configured is not None:
        return configured
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "speakerflow" / "models"


def home_root(explicit: str | os.PathLike | None = None) -> Path:
    """The store home: ``explicit``, else ``$SPEAKERFLOW_HOME``, else ``./.speakerflow``."""
    return Path(explicit or setting("home") or DEFAULT_HOME).resolve()
