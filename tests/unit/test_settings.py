"""One typed settings object: every ``SPEAKERFLOW_*`` variable the package mentions is a field
of ``Settings``, none is read from the environment any other way, docs/settings.md lists them
all, and ``setting()`` parses a field as ``Settings()`` does (a bad value names the variable)."""

import re
from pathlib import Path

import pytest

from speakerflow.settings import Settings, env_name, setting

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ("speakerflow", "schemas", "graphs", "ops", "pipelines", "training", "benchmarks")
PACKAGE += ("assets",)
#: a read of the environment naming a SPEAKERFLOW_ variable (writes for child processes are fine)
READ = re.compile(
    r"(environ\.get|getenv)\(\s*[\"']SPEAKERFLOW_"
    r"|environ\[[\"']SPEAKERFLOW_[A-Z0-9_]*[\"']\](?!\s*=)"
)


def _sources() -> list[Path]:
    return [p for top in PACKAGE for p in (ROOT / top).rglob("*.py") if p.name != "settings.py"]


def _names() -> set[str]:
    return {env_name(name) for name in Settings.model_fields}


def test_every_variable_the_package_names_is_a_setting():
    named = {m for p in _sources() for m in re.findall(r"SPEAKERFLOW_[A-Z0-9_]+", p.read_text())}
    assert named - _names() == set()


def test_nothing_reads_a_variable_past_the_settings():
    readers = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in _sources()
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if READ.search(line)
    ]
    assert readers == []


def test_the_docs_list_every_setting():
    doc = (ROOT / "docs" / "settings.md").read_text()
    listed = set(re.findall(r"^\| `(SPEAKERFLOW_[A-Z0-9_]+)`", doc, flags=re.M))
    assert listed == _names()


def test_setting_reads_the_environment_now_and_names_a_bad_value(monkeypatch):
    assert setting("index_keep_writer") is True and setting("bm25_cap") is None
    monkeypatch.setenv("SPEAKERFLOW_INDEX_KEEP_WRITER", "0")
    monkeypatch.setenv("SPEAKERFLOW_BM25_CAP", "500")
    assert setting("index_keep_writer") is False and setting("bm25_cap") == 500
    assert Settings().bm25_cap == 500
    monkeypatch.setenv("SPEAKERFLOW_BM25_CAP", "0")  # the field's own bound (>= 1) holds
    with pytest.raises(ValueError, match=r"\$SPEAKERFLOW_BM25_CAP='0'"):
        setting("bm25_cap")
    monkeypatch.delenv("SPEAKERFLOW_OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-only-the-plain-name")
    assert setting("openai_api_key").get_secret_value() == "sk-only-the-plain-name"
