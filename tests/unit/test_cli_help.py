"""Every argument of every ``speakerflow`` command has help text: walk the argparse tree."""

from __future__ import annotations

import argparse

from speakerflow.cli import build_parser


def _walk(parser: argparse.ArgumentParser, path: str):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield f"{path} {name}", "(command)", helps.get(name)
                yield from _walk(sub, f"{path} {name}")
        else:
            yield path, "/".join(action.option_strings) or action.dest, action.help


def test_every_cli_argument_has_help():
    missing = [
        f"{cmd}: {arg}"
        for cmd, arg, text in _walk(build_parser(), "speakerflow")
        if text is None or (text != argparse.SUPPRESS and not str(text).strip())
    ]
    assert not missing, "arguments without help:\n" + "\n".join(missing)


def test_the_walk_sees_nested_commands():
    seen = {(cmd, arg) for cmd, arg, _ in _walk(build_parser(), "speakerflow")}
    assert ("speakerflow bench harness", "--seeds") in seen
    assert ("speakerflow ingest", "path") in seen
    assert ("speakerflow", "--version") in seen
