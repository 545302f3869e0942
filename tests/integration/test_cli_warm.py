"""The CLI's first ask after an ingest embeds nothing (the ingest embedded the messages,
their windows and the records) and says on stderr what it loads."""

from __future__ import annotations

from speakerflow.cli import main
from speakerflow.settings import BUNDLED_SAMPLE


def test_the_first_ask_after_an_ingest_only_loads_the_embedder(tmp_path, capsys):
    home = ["--home", str(tmp_path / "home")]
    ingest = ["ingest", str(BUNDLED_SAMPLE), "--group", "t", "--embedder", "hashing"]
    assert main([*ingest, *home]) == 0
    caches = tmp_path / "home" / "groups" / "t" / "embeddings"
    assert (caches / "records-hashing-256.npz").exists()  # the Writer's records, at ingest
    capsys.readouterr()
    assert main(["ask", "t", "Where does Dev live?", "--embedder", "hashing", *home]) == 0
    out = capsys.readouterr()
    assert "loaded the embedder hashing-256 in" in out.err and "embedding" not in out.err
    assert "Vienna" in out.out
