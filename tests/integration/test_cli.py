"""The CLI as a user runs it, on the bundled sample and on the shared data sets."""

import json
from pathlib import Path

from conftest import shared

from speakerflow.cli import main


def _stats(capsys):
    capsys.readouterr()
    assert main(["stats", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_demo_ingests_and_answers(home, capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "Porto" in out and "[s2-t05]" in out
    assert _stats(capsys)["by_group"]["sample-team"]["messages"] == 32


def test_locomo_ingest_counts_and_idempotence(home, capsys):
    path = shared("locomo", "locomo10.json")
    # the loader's counts and idempotence, verbatim only: the rules Writer on LoCoMo is
    # test_forget's and test_eval_data's job, MiniLM at ingest test_ingest_embeds_new_messages's
    argv = ["ingest", str(path), "--format", "locomo", "--writer", "none", "--embedder", "none"]
    assert main(argv) == 0
    first = _stats(capsys)
    assert (first["groups"], first["messages"]) == (10, 5882)
    assert set(first) >= {"groups", "messages", "speakers", "sessions", "records", "by_group"}
    assert main(argv) == 0
    assert _stats(capsys) == first


def test_socialmem_networks_ingest_with_rosters(home, capsys):
    folder = shared("socialmem", "training")
    assert main(["ingest", str(folder), "--format", "socialmem"]) == 0
    stats = _stats(capsys)
    assert stats["groups"] == 10
    for path in sorted(folder.glob("social_grp_*.json")):
        data = json.loads(path.read_text())
        gid = data["meta"]["network_id"]
        said = {t["speaker"] for s in data["sessions"] for t in s["turns"]}
        assert set(stats["by_group"][gid]["roster"]) == said
        assert said <= set(data["speakers"])


def test_search_and_errors(home, capsys):
    main(["demo"])
    capsys.readouterr()
    assert main(["search", "sample-team", "night train", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["msg_id"] == "s3-t05"
    assert main(["search", "no-such-group", "x"]) == 2
    assert "no store" in capsys.readouterr().err
    sample = Path(__file__).parents[2] / "speakerflow" / "data" / "sample_team.jsonl"
    assert main(["ingest", str(sample), "--decoding", "extract"]) == 2  # rules has no decoding
    assert "--decoding is for --writer local" in capsys.readouterr().err


def test_ingest_embeds_new_messages(home, capsys):
    """`ingest --embedder` stores the group's message vectors (and windows) at ingest, so no
    question pays for them; a second ingest of the same file embeds nothing new; `none`
    leaves ingest model-free."""
    import numpy as np

    from speakerflow.settings import BUNDLED_SAMPLE

    argv = ["ingest", str(BUNDLED_SAMPLE), "--format", "jsonl", "--writer", "none"]
    assert main([*argv, "--group", "bare", "--embedder", "none", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["embedded"] is None
    assert main([*argv, "--group", "team", "--embedder", "hashing", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["embedded"] == 32
    groups = home.root / "groups"
    assert not list((groups / "bare").rglob("*.npz"))
    caches = sorted((groups / "team" / "embeddings").glob("messages-labelled-*.npz"))
    assert len(caches) == 1
    first = caches[0].stat().st_mtime_ns
    with np.load(caches[0]) as data:
        assert len(data["ids"]) == 32 and data["vecs"].shape[0] == 32
    assert main([*argv, "--group", "team", "--embedder", "hashing"]) == 0
    assert "embedder hashing: 32 message(s) have vectors" in capsys.readouterr().out
    assert caches[0].stat().st_mtime_ns == first  # nothing new to embed: the cache untouched


def test_a_closed_pipe_ends_quietly(tmp_path):
    """``speakerflow operators | head -1``: the reader leaves early; no traceback."""
    import subprocess
    import sys

    code = "import sys; from speakerflow.cli import main; sys.exit(main(['operators']))"
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path
    )
    proc.stdout.close()  # before it writes a line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert "Traceback" not in err and "BrokenPipeError" not in err


def test_ask_says_when_it_must_embed_the_group_first(tmp_path, capsys):
    from speakerflow.settings import BUNDLED_SAMPLE

    home = ["--home", str(tmp_path / "home")]
    assert main(["ingest", str(BUNDLED_SAMPLE), "--group", "t", "--embedder", "none", *home]) == 0
    capsys.readouterr()
    ask = ["ask", "t", "Where does Dev live?", "--embedder", "hashing", *home]
    assert main(ask) == 0
    first = capsys.readouterr()
    assert "embedding 32 message(s) of 't'" in first.err and "Vienna" in first.out
    assert main(ask) == 0  # the vectors are cached now: nothing to say
    assert "embedding" not in capsys.readouterr().err
