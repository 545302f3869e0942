"""Domain packs: a domain's entity types, relations, intents, state and trust rules as data
(``schema``), and how packs are found, validated and recorded per group (``load``)."""

from speakerflow.ops.knowledge.domain.load import (
    PackError,
    default_pack,
    group_pack,
    load_pack,
    pack_of,
    record_pack,
)
from speakerflow.ops.knowledge.domain.schema import DomainPack

__all__ = [
    "DomainPack",
    "PackError",
    "default_pack",
    "group_pack",
    "load_pack",
    "pack_of",
    "record_pack",
]
