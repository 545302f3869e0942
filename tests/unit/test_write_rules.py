"""The rules Writer on the bundled sample (in-memory store): layers, owners, chains, idempotence."""

import pytest

from speakerflow.graphs import GroupStore
from speakerflow.graphs.records import all_records, chains, heads
from speakerflow.ops.loaders import load
from speakerflow.ops.write.interfaces import Segment
from speakerflow.ops.write.writer import rules_text as rt
from speakerflow.ops.write.writer.rules import RulesWriter
from speakerflow.pipelines.write_path import write_group
from speakerflow.settings import BUNDLED_SAMPLE

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def sample():
    store = GroupStore("/unused", "sample-team", in_memory=True)
    store.append_messages(load(BUNDLED_SAMPLE, "jsonl", group="sample-team")[0][1])
    report = write_group(store, "rules", progress=False)
    return store, report


def _chain_with(store, owner, *needles):
    for chain in chains(store, owner=owner):
        text = " | ".join(r["content"] for r in chain)
        if len(chain) > 1 and all(n in text for n in needles):
            return chain
    raise AssertionError(
        f"no chain of {owner} containing {needles}: "
        f"{[[r['content'] for r in c] for c in chains(store, owner)]}"
    )


def test_sample_chains_residence_budget_and_stance(sample):
    store, report = sample
    assert report.rejected == 0 and report.updates >= 3
    munich, vienna = _chain_with(store, "Dev", "Munich", "Vienna")[-2:]
    assert "Munich" in munich["content"] and "Vienna" in vienna["content"]
    assert munich["invalid_at"] == vienna["valid_at"] and vienna["supersedes"] == munich["entry_id"]
    budget = _chain_with(store, "GROUP", "600", "700")
    assert "700" in budget[-1]["content"] and budget[-1]["source"] == "Ana"
    porto = _chain_with(store, "Dev", "Porto")
    # an update cites the message it continues and the new one (both sides of the change)
    assert porto[0]["from_ids"] == ["s1-t03"] and porto[-1]["from_ids"] == ["s1-t03", "s2-t02"]


def test_sample_owner_source_and_layers(sample):
    store, report = sample
    recs = all_records(store)
    assert set(report.records_by_layer) == {
        "per_speaker_core",
        "per_speaker_profile",
        "group_interaction",
        "group_insight",
    }
    settled = next(r for r in recs if "settled" in r["content"])
    assert (settled["owner"], settled["source"], settled["layer"], settled["utype"]) == (
        "GROUP",
        "Ana",
        "group_interaction",
        "decision",
    )
    norm = next(r for r in recs if "book their own flights" in r["content"])
    assert (norm["owner"], norm["layer"]) == ("GROUP", "group_insight")
    organised = next(r for r in recs if "organised" in r["content"])
    assert (organised["owner"], organised["source"], organised["layer"]) == (
        "Chloe",
        "Dev",
        "per_speaker_profile",
    )
    vegetarian = next(r for r in recs if "vegetarian" in r["content"] and r["owner"] == "Dev")
    # third person, without repeating the owner as subject (the owner field says who); the
    # preference before it in the message ("Either works for me.") stays its own slot
    assert vegetarian["source"] == "Dev" and vegetarian["content"].startswith("is vegetarian")
    assert not any(r["content"].startswith("See you") for r in recs)  # greetings write nothing


def test_recurring_behaviour_is_an_update_with_the_new_occurrence(sample):
    store, _ = sample
    chain = _chain_with(store, "Ben", "book")
    assert "again, 2026-04-10" in chain[-1]["content"] and chain[-1]["utype"] == "observation"


def test_rerun_writes_nothing_and_provenance_is_exact(sample):
    store, _ = sample
    n = store.records().num_rows
    again = write_group(store, "rules", progress=False)
    assert (again.segments, again.accepted) == (0, 0) and store.records().num_rows == n
    texts = {m["msg_id"]: m for m in store.messages().to_pylist()}
    for r in all_records(store):
        assert r["from_ids"] and all(m in texts for m in r["from_ids"])
        if r["owner"] != "GROUP" and r["layer"] == "per_speaker_core":
            speakers = {texts[m]["speaker"] for m in r["from_ids"]}
            if r["content"].startswith("Asked by "):  # an answer cites the question it answers
                asker = r["content"].removeprefix("Asked by ").split(" ")[0]
                assert speakers == {r["source"], asker}, r
            else:
                assert speakers == {r["source"]}, r
    assert len({h["entry_id"] for h in heads(store)}) == len(heads(store))


def test_answer_to_a_question_keeps_the_question():
    seg = Segment(
        "s#0",
        "g",
        ("Ben", "Chloe"),
        (
            {
                "msg_id": "a",
                "speaker": "Ben",
                "text": "Chloe, you still run every morning?",
                "ts": 1,
                "turn": 0,
                "session_id": "s",
            },
            {
                "msg_id": "b",
                "speaker": "Chloe",
                "text": "Every morning, 5k before work.",
                "ts": 2,
                "turn": 1,
                "session_id": "s",
            },
        ),
    )
    [act] = RulesWriter().propose(seg).actions
    # it cites the question too: the record says what was asked (and Validate checks content
    # against the cited messages)
    assert act["owner"] == act["source"] == "Chloe" and act["from_ids"] == ["a", "b"]
    assert "run" in act["content"] and "5k" in act["content"]


def test_third_person_rewrite_and_slot_families():
    assert rt.third_person("I genuinely have a hard stop", "Mei") == "Mei genuinely has a hard stop"
    assert rt.third_person("I ran 10k", "Chloe") == "Chloe ran 10k"
    # several adverbs before the verb: the verb agrees, not the first adverb
    assert rt.third_person("I just never swim in March", "Mei") == "Mei just never swims in March"
    assert (
        rt.third_person("you also usually carry the tent", "Mei", addressee="Chloe")
        == "Chloe also usually carries the tent"
    )
    assert rt.third_person("I reply by noon", "Mei") == "Mei replies by noon"  # a verb in -ly
    # a capitalised "Me" / "You" / "My" inside a sentence is a title's word, not a person
    assert (
        rt.third_person("we danced to Lean On Me, I loved it", "Ana")
        == "we danced to Lean On Me, Ana loved it"
    )
    assert (
        rt.third_person("you should hear Wish You Were Here", "Ana", addressee="Ben")
        == "Ben should hear Wish You Were Here"
    )
    assert rt.third_person("My plan stands", "Ana") == "Ana's plan stands"
    # after a modal or "do" (a question, "should I") the verb is a bare infinitive
    assert rt.third_person("Could I swap the Friday shift?", "Rhys") == (
        "Could Rhys swap the Friday shift?"
    )
    assert rt.third_person("so what should I bring", "Rhys") == "so what should Rhys bring"
    # a past tense or an adverb of time after "I" takes no -s
    assert rt.third_person("I last saw it in May", "Ana") == "Ana last saw it in May"
    assert rt.third_person("I misheard the time", "Ana") == "Ana misheard the time"
    # an interjection goes; "fine by ..." / "fine with ..." is the agreement itself and stays
    assert rt.strip_filler("Fine, see you at the dock") == "See you at the dock"
    assert rt.strip_filler("fine with Mei, the dock works") == "Fine with Mei, the dock works"
    assert rt.family("I live in Vienna now") == "residence"
    assert rt.family("the budget goes up to 700 euros") == "budget"
    assert rt.family("I'll book mine tomorrow, as usual") == "habit"
    assert rt.topic_words("I prefer Lisbon") == rt.topic_words("I'd rather Lisbon") == {"lisbon"}


def _msg(i, speaker, text, session="s", reply_to=None):
    return {
        "msg_id": i,
        "speaker": speaker,
        "text": text,
        "ts": 1,
        "turn": 0,
        "session_id": session,
        "reply_to": reply_to,
    }


def test_views_open_with_their_source_and_vocatives_are_not_subjects():
    seg = Segment(
        "s#0",
        "g",
        ("Ana", "Ben", "Chloe"),
        (
            _msg("a", "Ana", "Ben always books things early, which helps the whole trip a lot."),
            _msg("b", "Ben", "Chloe I will book the hotel in Porto. My sister lives there."),
        ),
    )
    acts = RulesWriter().propose(seg).actions
    view = next(a for a in acts if a["owner"] == "Ben" and a["source"] == "Ana")
    # the view names its holder and keeps whom it is about as its subject
    assert view["layer"] == "per_speaker_profile"
    assert view["content"].startswith("Ana says Ben always books things early")
    [own] = [a for a in acts if a["source"] == "Ben"]
    # "Chloe" opens the sentence as a vocative: Ben's own record, without the name; the
    # message's two facts about Ben are one record, and it does not repeat Ben's name
    assert own["owner"] == "Ben" and own["layer"] == "per_speaker_core"
    assert "Chloe" not in own["content"] and "Ben" not in own["content"]
    assert "book the hotel in Porto" in own["content"] and "; sister lives there" in own["content"]
    # said again in a later session: not proposed again (the head holds the attributed words)
    head = {**view, "entry_id": "h1", "event": view.get("event", "")}
    later = Segment(
        "s#1",
        "g",
        ("Ana", "Ben", "Chloe"),
        (_msg("c", "Ana", view["content"].removeprefix("Ana says "), session="t"),),
        heads=(head,),
        history=seg.messages,
    )
    assert not [a for a in RulesWriter().propose(later).actions if a["owner"] == "Ben"]


def _written(messages, tmp_path, writer="rules"):
    """A store of ``messages`` (speaker, text, session, day) written by the rules Writer."""
    import json

    path = tmp_path / "crew.jsonl"
    path.write_text(
        "\n".join(
            json.dumps(
                {
                    "msg_id": f"m{i:02d}",
                    "group_id": "crew",
                    "session_id": session,
                    "ts": f"2026-03-{day:02d}T10:{i:02d}:00Z",
                    "speaker": speaker,
                    "text": text,
                }
            )
            for i, (speaker, text, session, day) in enumerate(messages)
        )
    )
    store = GroupStore("/unused", "crew", in_memory=True)
    store.append_messages(load(path, "jsonl")[0][1])
    write_group(store, writer, progress=False)
    return store


@pytest.mark.parametrize(
    "later",
    [
        "Actually scratch that, the red tent is the one I want for the trip",  # reconsidering
        "For the trip I'd budget 55 a night for the tent now that the price rose",  # numbers moved
        "I don't want the blue tent for the trip, it leaks",  # a negated word of the record
    ],
)
def test_a_change_of_mind_updates_the_persons_record(later, tmp_path):
    store = _written(
        [
            ("Ines", "For the camping trip I want the blue tent, 40 a night", "s1", 2),
            ("Omar", "sounds good to me", "s1", 2),
            ("Pia", "who brings the stove?", "s2", 9),
            ("Ines", later, "s2", 9),
        ],
        tmp_path,
    )
    chain = next(c for c in chains(store, owner="Ines") if len(c) > 1)
    assert "m00" in chain[0]["from_ids"] and "m03" in chain[-1]["from_ids"]
    assert chain[-1]["supersedes"] == chain[-2]["entry_id"] and "(before," in chain[-1]["content"]


@pytest.mark.parametrize(
    "fix",
    [
        "Ines, the ferry tickets came to 126 in total, you forgot the bike fee",  # by name
        "no, the ferry tickets were 126 with the bike fee, I have the receipt",  # next turn
    ],
)
def test_another_persons_correction_of_a_number_updates_the_record(fix, tmp_path):
    store = _written(
        [
            ("Ines", "The ferry tickets came to 98 for the four of us", "s1", 2),
            ("Omar", fix, "s1", 2),
        ],
        tmp_path,
    )
    chain = next(c for c in chains(store, owner="Ines") if len(c) > 1)
    assert "m00" in chain[0]["from_ids"] and "m01" in chain[-1]["from_ids"]
    assert chain[0]["source"] == "Ines" and chain[-1]["source"] == "Omar"
    assert "126" in chain[-1]["content"]


@pytest.mark.parametrize(
    ("first", "reply"),
    [
        # later and to no one
        ("The ferry tickets came to 98 for the four of us", None),
        # a question back
        ("The ferry tickets came to 98 for the four of us", "98 for the ferry? I paid 126 once"),
        # each person's own view
        ("I think the novel is a 4, the ending was great", "I think the novel is a 2, it dragged"),
    ],
)
def test_another_persons_number_that_sets_nothing_right_is_no_correction(first, reply, tmp_path):
    later = [("Pia", "who brings the stove?", "s1", 2)] if reply is None else []
    fix = reply or "the ferry back on Sunday costs 126 for the four of us"
    store = _written([("Ines", first, "s1", 2), *later, ("Omar", fix, "s1", 2)], tmp_path)
    assert all(len(c) == 1 for c in chains(store, owner="Ines"))


def test_a_statement_on_another_matter_is_no_revision(tmp_path):
    store = _written(
        [
            ("Ines", "For the camping trip I want the blue tent, 40 a night", "s1", 2),
            ("Ines", "My sister arrives on the train from York next month", "s2", 9),
        ],
        tmp_path,
    )
    assert all(len(c) == 1 for c in chains(store, owner="Ines"))


@pytest.mark.parametrize(
    ("first", "later"),
    [
        (
            "I'd rather we hire a caterer for the wedding",
            "Actually let's cook the food ourselves for the reception",
        ),
        (
            "I prefer the laptop with the bigger screen",
            "Actually the notebook with the smaller display is lighter, I'll take that",
        ),
    ],
)
def test_a_change_of_mind_in_other_words_is_found_by_its_embedding(first, later, tmp_path):
    """No content word is shared, so only the sentence embeddings (MiniLM, the default
    ``revise_embedder``) put the later view on the first one's matter."""
    messages = [("Ines", first, "s1", 2), ("Omar", "ok", "s1", 2), ("Ines", later, "s2", 9)]
    store = _written(messages, tmp_path)
    chain = next(c for c in chains(store, owner="Ines") if len(c) > 1)
    assert "m00" in chain[0]["from_ids"] and "m02" in chain[-1]["from_ids"]
    words_only = _written(messages, tmp_path, RulesWriter(revise_embedder="none"))
    assert all(len(c) == 1 for c in chains(words_only, owner="Ines"))


def test_a_revision_read_from_the_whole_message_drops_its_opening_vocative():
    """When none of a revising message's statements is its owner's own, the UPDATE is read
    from the whole message: a name opening it addresses someone and is not kept (it would be
    left dangling once the owner is dropped as the subject)."""
    from speakerflow.ops.text.people import PersonResolver
    from speakerflow.ops.write.writer.rules_config import RulesConfig
    from speakerflow.ops.write.writer.rules_revise import revision_text

    people = PersonResolver(("Ines", "Omar"), {})
    msg = {"speaker": "Ines", "text": "Omar, I think the deposit was 55.", "ts": None}
    text = revision_text(msg, "Ines", RulesConfig(), people)
    assert "Omar" not in text and "55" in text


def test_the_newest_statement_of_a_record_drops_its_note_even_with_dates_inside():
    from speakerflow.ops.write.writer.rules_content import last_clause

    content = "Meet at 7pm on Friday (3 July 2026) (before, 2026-06-01: Meet at 6pm (1 June 2026))"
    assert last_clause(content) == "Meet at 7pm on Friday (3 July 2026)"
    assert last_clause("a; b (again, 2026-06-01)") == "b"
    assert last_clause("Go by bus (before, 2026-06-01: a; b)") == "Go by bus"
