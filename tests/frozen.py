"""The check of a frozen data folder, shared by its tests (tests/unit/test_*_frozen.py)."""

from __future__ import annotations

import hashlib
from pathlib import Path


def assert_files_unchanged(root: Path, sha256: dict[str, str], skip: tuple[str, ...] = ()) -> None:
    """Every file under ``root`` (but the names in ``skip``) is one of ``sha256``'s, each with
    its pinned digest, and none is missing: any edit, addition or removal fails."""
    paths = [p for p in root.rglob("*") if p.is_file() and p.name not in skip]
    files = {p.name: p for p in paths}
    assert len(files) == len(paths), f"two files under {root} share a name"
    assert sorted(files) == sorted(sha256)
    for name, path in files.items():
        assert hashlib.sha256(path.read_bytes()).hexdigest() == sha256[name], name
