"""Find, read and validate domain packs; the default pack; the pack a group was ingested with.

A pack is named by a path (a ``.yaml``/``.yml``/``.json`` file, or a folder holding
``pack.yaml``) or by the name of a bundled pack (``speakerflow/data/domains/<name>/``:
``trading``, ``itops``). The default pack is ``$SPEAKERFLOW_DOMAIN`` when set, else
``trading``. A malformed pack raises :class:`PackError`, which names the file, the line, the
entry (``relations[3] (fee)``) and the field.

``ingest --domain`` records the pack a group is read with in ``<group>/domain.json``
(:func:`record_pack`); every later reader of the group (maintain, inject, the Dagster assets,
``Memory``) takes it from there (:func:`pack_of`).
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from speakerflow.ops.knowledge.domain.schema import DomainPack, PackIssue, check_pack
from speakerflow.settings import setting

#: where a group keeps the pack it was ingested with
GROUP_FILE = "domain.json"
#: the file a pack folder holds
PACK_FILE = "pack.yaml"
DEFAULT_NAME = "trading"


class PackError(ValueError):
    """A pack that cannot be used: ``file``, ``line`` (or None), ``entry``, ``field``, why."""

    def __init__(self, file: str, entry: str, field: str, message: str, line: int | None = None):
        where = f"{file}:{line}" if line else file
        what = (
            f"{entry}: field '{field}'"
            if entry and field
            else f"field '{field}'"
            if field
            else entry
        )
        super().__init__(f"{where}: {what}: {message}" if what else f"{where}: {message}")
        self.file, self.entry, self.field, self.line, self.reason = (
            file,
            entry,
            field,
            line,
            message,
        )


def bundled_dir() -> Path:
    """The folder of the bundled packs (package data)."""
    return Path(str(resources.files("speakerflow").joinpath("data", "domains")))


def bundled() -> dict[str, Path]:
    """Bundled pack name -> its pack file."""
    root = bundled_dir()
    return {p.parent.name: p for p in sorted(root.glob(f"*/{PACK_FILE}"))}


def pack_path(spec: str | Path) -> Path:
    """The pack file ``spec`` names: a file, a folder with ``pack.yaml`` or a bundled name."""
    path = Path(spec)
    if path.is_dir():
        path = path / PACK_FILE
    if path.is_file():
        return path
    packs = bundled()
    if isinstance(spec, str) and spec in packs:
        return packs[spec]
    raise PackError(
        str(spec), "", "", f"no such pack file or folder, nor a bundled pack ({', '.join(packs)})"
    )


_CACHE: dict[tuple[str, float], DomainPack] = {}


def load_pack(spec: str | Path) -> DomainPack:
    """The validated pack ``spec`` names (see :func:`pack_path`); cached by file and mtime."""
    path = pack_path(spec)
    key = (str(path.resolve()), path.stat().st_mtime)
    if key not in _CACHE:
        text = path.read_text(encoding="utf-8")
        _CACHE[key] = parse_pack(text, str(path))
    return _CACHE[key]


def parse_pack(text: str, file: str = "<pack>") -> DomainPack:
    """Validate the pack in ``text`` (YAML or JSON); :class:`PackError` names what is wrong."""
    # libyaml's loader where pyyaml was built with it: the pure-Python one took 1.8 s of CPU
    # for the default pack (most of a cold `maintain` on a small group)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        node = yaml.compose(text, Loader=loader)
        data = yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise PackError(
            file,
            "",
            "",
            f"not valid YAML/JSON: {getattr(exc, 'problem', exc)}",
            mark.line + 1 if mark else None,
        ) from None
    if not isinstance(data, dict):
        raise PackError(file, "", "", "a pack is a mapping (name, entity_types, relations ...)")
    try:
        pack = DomainPack.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise _error(file, data, node, loc, err["msg"] + more) from None
    try:
        check_pack(pack)
    except PackIssue as exc:
        raise _error(file, data, node, exc.loc, exc.message) from None
    return pack


def _error(file: str, data: Any, node: Any, loc: tuple, message: str) -> PackError:
    """A :class:`PackError` for ``loc``: the entry is the list item (with its name or id) or
    mapping entry the error is in (``relations[3] (fee)``, ``entity_types.asset``), the field
    the rest of the path (``values.<value>``); the line is the YAML node's."""
    ints = [i for i, k in enumerate(loc) if isinstance(k, int)]
    if ints and loc[0] == "entity_types" and len(loc) > 3 and ints[0] == 3:
        cut = 3  # an entity of a type: entity_types.asset.entities[2]
    elif ints:
        cut = ints[0]
    else:
        cut = (
            min(1, len(loc) - 1)
            if loc and loc[0] in ("entity_types", "state", "trust", "reader")
            else 0
        )
    entry_loc, field_loc = loc[: cut + 1], loc[cut + 1 :]
    if entry_loc and not field_loc and not isinstance(entry_loc[-1], int):
        entry_loc, field_loc = entry_loc[:-1], entry_loc[-1:]
    obj = _walk(data, entry_loc)
    entry = _path(entry_loc)
    if entry_loc and isinstance(obj, dict):
        label = obj.get("name", obj.get("id"))
        if isinstance(label, str):
            entry += f" ({label})"
    return PackError(file, entry, _path(field_loc), message, _line(node, loc))


def _path(loc: tuple) -> str:
    out = ""
    for k in loc:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else str(k))
    return out


def _walk(data: Any, loc: tuple) -> Any:
    for k in loc:
        if isinstance(data, dict) and k in data:
            data = data[k]
        elif isinstance(data, list) and isinstance(k, int) and k < len(data):
            data = data[k]
        else:
            return None
    return data


def _line(node: Any, loc: tuple) -> int | None:
    """1-based line of the deepest YAML node on ``loc`` (the key's line for a missing field)."""
    line = node.start_mark.line + 1 if node is not None else None
    for k in loc:
        if isinstance(node, yaml.MappingNode):
            pair = next((p for p in node.value if p[0].value == str(k)), None)
            if pair is None:
                break
            line, node = pair[0].start_mark.line + 1, pair[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(k, int) and k < len(node.value):
            node = node.value[k]
            line = node.start_mark.line + 1
        else:
            break
    return line


_DEFAULT: dict[str, DomainPack] = {}


def default_pack() -> DomainPack:
    """``$SPEAKERFLOW_DOMAIN`` (a path or bundled name) when set, else the bundled trading pack."""
    spec = setting("domain") or DEFAULT_NAME
    if spec not in _DEFAULT:
        _DEFAULT[spec] = load_pack(spec)
    return _DEFAULT[spec]


def pack_digest(pack: DomainPack) -> str:
    """A short content hash (what caches of compiled packs and classifiers are keyed by)."""
    return hashlib.sha256(pack.model_dump_json().encode()).hexdigest()[:16]


def record_pack(store: Any, pack: DomainPack) -> None:
    """Keep ``pack`` as the group's (``<group>/domain.json``; an in-memory store keeps it on the
    store object)."""
    if getattr(store, "in_memory", False):
        store.domain_pack = pack
        return
    path = Path(store.root) / GROUP_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(pack.model_dump_json(indent=1), encoding="utf-8")
    tmp.replace(path)


def group_pack(store: Any) -> DomainPack | None:
    """The pack the group was ingested with, None when it has none of its own."""
    if getattr(store, "in_memory", False):
        return getattr(store, "domain_pack", None)
    path = Path(store.root) / GROUP_FILE
    if not path.exists():
        return None
    key = (str(path), path.stat().st_mtime)
    if key not in _CACHE:
        try:
            _CACHE[key] = DomainPack.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, ValidationError) as exc:
            raise PackError(
                str(path), "", "", f"the group's recorded pack is unreadable: {exc}"
            ) from None
    return _CACHE[key]


def pack_of(store: Any, override: DomainPack | None = None) -> DomainPack:
    """``override``, else the group's recorded pack, else :func:`default_pack`."""
    return override or group_pack(store) or default_pack()
