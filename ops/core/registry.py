"""A registry of operator classes by name, so pipelines can be built from config.

It refuses duplicate and reserved names instead of silently replacing an operator.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from pydantic import BaseModel

from speakerflow.ops.core.base import Operator

RESERVED = frozenset({"pipeline", "lambda", "operator", "all", "none"})
_REGISTRY: dict[str, type[Operator]] = {}


def register(cls: type[Operator]) -> type[Operator]:
    """Class decorator: register ``cls`` under its ``name`` (lower-case)."""
    key = (cls.name or cls.__name__).lower()
    if key in RESERVED:
        raise ValueError(f"operator name {key!r} is reserved; choose another")
    if key in _REGISTRY and _REGISTRY[key] is not cls:
        raise ValueError(
            f"an operator named {key!r} is already registered ({_REGISTRY[key].__module__})"
        )
    _REGISTRY[key] = cls
    return cls


def get(name: str) -> type[Operator]:
    """The operator class registered as ``name``."""
    try:
        return _REGISTRY[name.lower()]
    except KeyError:
        raise KeyError(f"no operator named {name!r}; known: {sorted(_REGISTRY)}") from None


def names() -> list[str]:
    """All registered operator names, sorted."""
    return sorted(_REGISTRY)


def discover(packages: tuple[str, ...] = ("speakerflow.ops",)) -> dict[str, str]:
    """Import every module under ``packages`` so their operators register themselves.

    Returns ``{module: error}`` for modules that could not be imported (an optional
    dependency missing); the others are imported once (Python caches them).
    """
    failed: dict[str, str] = {}
    for pkg_name in packages:
        pkg = importlib.import_module(pkg_name)
        for info in pkgutil.walk_packages(pkg.__path__, prefix=f"{pkg_name}."):
            try:
                importlib.import_module(info.name)
            except ImportError as exc:  # an optional dependency (torch, dagster ...) is missing
                failed[info.name] = f"{type(exc).__name__}: {exc}"
    return failed


def describe(cls: type[Operator]) -> dict[str, Any]:
    """What a catalogue shows of an operator class: name, module, one-line summary,
    consumed and produced columns (with Arrow types), config fields, passthrough and
    optional requirements."""
    fields = []
    for fname, info in cls.Config.model_fields.items():
        default = None if info.is_required() else info.get_default(call_default_factory=True)
        fields.append(
            {
                "name": fname,
                "type": _type_name(info.annotation),
                "required": info.is_required(),
                "default": _plain(default),
                "description": info.description or "",
            }
        )
    summary = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())
    return {
        "name": (cls.name or cls.__name__).lower(),
        "class": f"{cls.__module__}.{cls.__qualname__}",
        "summary": summary,
        "consumes": list(cls.consumes),
        "produces": [{"name": f.name, "type": str(f.type)} for f in cls.produces],
        "passthrough": bool(cls.passthrough),
        "requires": [module for module, _ in cls.requires],
        "config": fields,
    }


def catalogue() -> list[dict[str, Any]]:
    """:func:`describe` of every registered operator, sorted by name."""
    return [describe(_REGISTRY[name]) for name in names()]


def _plain(value: Any) -> Any:
    """``value`` as JSON-friendly data (configs nested in configs become dicts)."""
    if isinstance(value, (str, int, float, bool, type(None))):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return repr(value)


def _type_name(annotation: Any) -> str:
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")
