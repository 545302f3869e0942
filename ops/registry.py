"""A registry of operator classes by name, so pipelines can be built from config.

It refuses duplicate and reserved names instead of silently replacing an operator.
"""
from __future__ import annotations

from .base import Operator

RESERVED = frozenset({"pipeline", "lambda", "operator", "all", "none"})
_REGISTRY: dict[str, type[Operator]] = {}


def register(cls: type[Operator]) -> type[Operator]:
    """Class decorator: register ``cls`` under its ``name`` (lower-case)."""
    key = (cls.name or cls.__name__).lower()
    if key in RESERVED:
        raise ValueError(f"operator name {key!r} is reserved; choose another")
    if key in _REGISTRY and _REGISTRY[key] is not cls:
        raise ValueError(f"an operator named {key!r} is already registered ({_REGISTRY[key].__module__})")
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
