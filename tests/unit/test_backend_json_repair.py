"""JSON repair for small-model output: each defect repaired, or a clear error."""

from __future__ import annotations

import pytest

from speakerflow.ops.backends.json_repair import close_truncated, repair_json

pytestmark = pytest.mark.timeout(30)

NOOP = {"actions": [{"action": "NOOP"}]}


@pytest.mark.parametrize(
    ("text", "repair"),
    [
        ('```json\n{"actions": [{"action": "NOOP"}]}\n```', "code_fence"),
        ('```\n{"actions": [{"action": "NOOP"}]}\n```', "code_fence"),
        ('<think>which {layer}?</think>\n{"actions": [{"action": "NOOP"}]}', "think_block"),
        ('Here is the memory update:\n{"actions": [{"action": "NOOP"}]}', "leading_prose"),
        ('{"actions": [{"action": "NOOP"},],}', "syntax"),  # trailing commas (json-repair)
        ("{'actions': [{'action': 'NOOP'}]}", "syntax"),  # single quotes (json-repair)
        ('{"actions": [{"action": "NOOP"}] "note": 1', "truncated"),
        ('{"actions": [{"action": "NOOP"}]} Hope this helps!', "trailing_prose"),
        ('{"actions": [{"action": "NOOP"}, {"action": "ADD", "cont', "truncated"),
    ],
)
def test_each_defect_is_repaired_and_named(text, repair):
    result = repair_json(text)
    assert result.ok, result.error
    assert result.value == NOOP
    assert repair in result.repairs


def test_clean_json_needs_no_repair():
    result = repair_json('{"actions": []}')
    assert result.value == {"actions": []} and result.repairs == ()


def test_commas_and_quotes_inside_strings_are_untouched():
    text = '{"content": "budget: 600, then 700,]", "who": "it\'s Ana\'s"}'
    result = repair_json(text)
    assert result.repairs == ()
    assert result.value == {"content": "budget: 600, then 700,]", "who": "it's Ana's"}


def test_single_quotes_keep_apostrophes_and_double_quotes():
    fixed = repair_json("{'content': 'Ana's \"plan\"', 'ok': True}")
    assert fixed.value == {"content": 'Ana\'s "plan"', "ok": True} and "syntax" in fixed.repairs
    assert repair_json("{'content': 'True story', 'ok': True}").value == {
        "content": "True story",
        "ok": True,
    }


def test_python_literals_and_a_missing_comma_are_repaired():
    assert repair_json('{"a": True, "b": None, "c": False}').value == {
        "a": True,
        "b": None,
        "c": False,
    }
    result = repair_json('{"a": "x" "b": 1}')  # a missing comma between complete members
    assert result.value == {"a": "x", "b": 1} and result.repairs == ("syntax",)


def test_a_truncated_string_is_never_closed_into_content():
    """json-repair alone would close the cut string; here only complete elements are kept."""
    text = '{"actions": [{"action": "NOOP"}, {"action": "ADD", "content": "the offsite is in Por'
    result = repair_json(text)
    assert result.value == NOOP and "truncated" in result.repairs


def test_truncation_keeps_only_complete_elements():
    assert close_truncated('{"a": [{"x": 1}, {"y": 2}, {"z"') == '{"a": [{"x": 1}, {"y": 2}]}'
    assert close_truncated('{"a": 1}') is None  # balanced: nothing to close


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty"),
        ("   ", "empty"),
        (None, "empty"),
        ("I could not find anything to record.", "no JSON"),
        ("<think>still thinking about {it", "no JSON"),
        ("[1, 2", "unrepairable JSON"),
    ],
)
def test_unrepairable_output_returns_an_error_not_an_exception(text, fragment):
    result = repair_json(text)
    assert not result.ok and result.value is None
    assert fragment in result.error


def test_garbage_bytes_from_a_random_model_give_a_parse_error():
    from speakerflow.ops.write.writer.chat import parse_writer_text

    garbage = 'or}ft\ufffdiv willOUPv 202um00U\x08 (|ENactions year4567{"00 jA {}\x00 202ift'
    actions, error, _ = parse_writer_text(garbage)
    assert actions == [] and error  # at best a stray "{}" decodes: no action list in it


def test_reasoning_closed_by_a_bare_think_tag_is_dropped():
    text = 'The user wants {actions}. Maybe [ADD]?</think>\n{"actions": [{"action": "NOOP"}]}'
    result = repair_json(text)
    assert result.value == NOOP and "think_block" in result.repairs


def test_the_longest_json_value_wins_over_brackets_in_prose():
    text = 'Per rule [1] and {x}: {"actions": [{"action": "NOOP"}]} (see [2])'
    result = repair_json(text)
    assert result.value == NOOP
    assert "leading_prose" in result.repairs and "trailing_prose" in result.repairs
