"""SFT pairs from teacher files and from our own Writer, split by whole network."""

from __future__ import annotations

import json

import pytest

from speakerflow.ops.write.interfaces import WriterOutput
from speakerflow.training.data import (
    build_sft_dataset,
    load_networks,
    read_jsonl,
    split_by_network,
    write_jsonl,
)
from tests.conftest import shared
from tests.integration.test_train_cli import _network


def test_teacher_pairs_show_teacher_heads_and_target_actions(tmp_path):
    pairs = build_sft_dataset(_network(tmp_path))
    assert [p["position"] for p in pairs] == [0, 1]
    first, second = pairs
    assert first["prompt"][0]["role"] == "system" and first["completion"][0]["role"] == "assistant"
    assert (
        json.loads(first["completion"][0]["content"])["actions"][0]["content"] == "Lives in Vienna"
    )
    # the second prompt lists the teacher's head x1, which the target UPDATE names
    assert "x1 [per_speaker_core|Ana by Ana" in second["prompt"][1]["content"]
    assert json.loads(second["completion"][0]["content"])["actions"][0]["entry_id"] == "x1"
    assert "I moved to Graz." in second["prompt"][1]["content"]


def test_reference_states_replay_the_teacher(tmp_path):
    [net] = load_networks(_network(tmp_path))
    refs = net.reference_states()
    assert [h["content"] for h in refs[0].heads()] == ["Lives in Vienna"]
    assert [h["content"] for h in refs[1].heads()] == ["Lives in Graz"] and refs[1].edges == [
        ("x1", "x2")
    ]


class EchoWriter:
    """A backend that records one fact per speaker's first message, and repeats it."""

    name = "echo"

    def propose(self, segment):
        m = segment.messages[0]
        act = {
            "action": "ADD",
            "owner": m["speaker"],
            "source": m["speaker"],
            "layer": "per_speaker_core",
            "utype": "fact",
            "content": m["text"],
        }
        return WriterOutput(actions=[act, act])


def test_backend_as_teacher_keeps_only_valid_novel_actions(tmp_path):
    pairs = build_sft_dataset(_network(tmp_path), backend=EchoWriter())
    targets = [json.loads(p["completion"][0]["content"])["actions"] for p in pairs]
    assert targets == [
        [
            {
                "action": "ADD",
                "owner": "Ana",
                "source": "Ana",
                "layer": "per_speaker_core",
                "utype": "fact",
                "content": "I live in Vienna.",
            }
        ],
        [
            {
                "action": "ADD",
                "owner": "Ana",
                "source": "Ana",
                "layer": "per_speaker_core",
                "utype": "fact",
                "content": "I moved to Graz.",
            }
        ],
    ]
    assert all(p["teacher"] == "echo" for p in pairs)
    assert "I live in Vienna." in pairs[1]["prompt"][1]["content"]  # its own earlier write


def test_split_by_network_never_shares_a_network(tmp_path):
    items = [{"network_id": f"n{i % 5}", "position": i} for i in range(20)]
    train, held = split_by_network(items, heldout_fraction=0.4, seed=3)
    assert {i["network_id"] for i in train}.isdisjoint({i["network_id"] for i in held})
    assert len({i["network_id"] for i in held}) == 2 and len(train) + len(held) == 20
    assert split_by_network(items, heldout_fraction=0.4, seed=3) == (train, held)
    train, held = split_by_network(items, heldout=["n1"])
    assert {i["network_id"] for i in held} == {"n1"}
    path = write_jsonl(held, tmp_path / "h.jsonl")
    assert read_jsonl(path) == held


@pytest.mark.data
def test_shared_training_folder_gives_every_writing_segment():
    pairs = build_sft_dataset(shared("socialmem", "training"))
    by_net: dict[str, int] = {}
    for p in pairs:
        by_net[p["network_id"]] = by_net.get(p["network_id"], 0) + 1
    # ten real networks x five sessions, plus the two NOOP trajectories
    assert len(by_net) == 12 and sum(by_net.values()) == 52
    noop = [p for p in pairs if p["network_id"] == "manual_noop_ack"][0]
    assert json.loads(noop["completion"][0]["content"]) == {"actions": [{"action": "NOOP"}]}
    train, held = split_by_network(pairs)
    assert {p["network_id"] for p in train}.isdisjoint({p["network_id"] for p in held})


def test_teacher_in_another_language_is_refused(tmp_path):
    from speakerflow.training.data import teacher_overlap, trusted

    data = _network(tmp_path)
    [net] = load_networks(data)
    assert teacher_overlap(net) == pytest.approx(4 / 6)  # in, vienna / in, graz of 6 tokens
    path = tmp_path / "teacher" / "grp_t01.json"
    teacher = json.loads(path.read_text())
    teacher["transitions"][0]["actions"][0]["content"] = "Vive a Vienna"
    teacher["transitions"][1]["actions"][0]["content"] = "Vive a Graz"
    path.write_text(json.dumps(teacher))
    [net] = load_networks(data)
    assert teacher_overlap(net) == pytest.approx(2 / 6)
    assert trusted([net], 0.5) == ([], ["grp_t01"])
    assert build_sft_dataset(data, min_teacher_overlap=0.5) == []


@pytest.mark.data
def test_shared_teachers_written_in_another_language_are_flagged():
    from speakerflow.training.data import trusted

    nets = load_networks(shared("socialmem", "training"))
    _, refused = trusted(nets, 0.5)
    assert sorted(refused) == [
        "grp_8b9c0d1e",
        "grp_9c0d1e2f",
    ]  # Polish / Italian records of English chats


@pytest.mark.data
def test_cli_split_holds_out_the_same_networks_for_pairs_and_networks():
    import argparse

    from speakerflow.cli.train import _split
    from speakerflow.training.data import trusted

    folder = shared("socialmem", "training")
    args = argparse.Namespace(data=str(folder), teacher=None, heldout_fraction=0.2, seed=0)
    pairs = build_sft_dataset(folder, min_teacher_overlap=0.5)  # refused teachers dropped
    nets, _ = trusted(load_networks(folder), 0.5)
    held_pairs = {p["network_id"] for p in _split(args, pairs)[1]}
    held_nets = {n.network_id for n in _split(args, nets)[1]}
    assert held_pairs == held_nets and len(held_nets) >= 2
