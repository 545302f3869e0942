"""No domain in ``ops/`` code (issue 27): no relation, intent, kind, category value or reference
entity (asset, service, team ... and their aliases; not people) of any bundled domain pack
appears in the Python source under ``ops/``.

The check is precise about what "appears" means, because some names are ordinary English:

* **identifier-like names** -- anything with an underscore, hyphen, digit or capital letter
  (``win_rate``, ``trade_preparation``, ``BTC``, ``Bitcoin``, ``checkout-api``, ``sev2``),
  every multi-word name (``grid bot``) and every single word that is no English word (the
  MiniLM tokenizer's vocabulary) -- must not occur anywhere in the source, docstrings and
  comments included, as a whole word (case-insensitive);
* **plain English words** (``fee``, ``status``, ``bullish``, ``open``, ``resolved``) must not
  be a string literal of their own (``"fee"``, ``'bullish'``): a domain name used as data
  (a key, a label, a comparison) is such a literal. The same word inside the reader's
  generic English (an ending pattern holds "resolved", a docstring says "open") is grammar,
  which the issue allows to stay in code.

Entity *type* names (asset, trader, service ...) are not checked: several are the
framework's own words too ("risk" is the risk class of an action, "person" the built-in type).
"""

import ast
import re
from pathlib import Path

from speakerflow.ops.knowledge.detect import english_words, is_word
from speakerflow.ops.knowledge.domain.load import bundled, load_pack
from speakerflow.ops.knowledge.domain.schema import PERSON

OPS = Path(__file__).resolve().parents[2] / "ops"


def pack_names() -> dict[str, set[str]]:
    """name -> the packs it comes from, over every bundled pack."""
    out: dict[str, set[str]] = {}
    for name, path in bundled().items():
        p = load_pack(path)
        names = {r.name for r in p.relations} | {i.name for i in p.intents}
        names |= {k for r in p.relations for k in r.kinds}
        names |= {k for i in p.intents for k in (*i.needs, *i.answers)}
        names |= {v for r in p.relations for v in r.values}
        for t, et in p.entity_types.items():
            if t != PERSON:  # people's names are no domain vocabulary
                names |= {n for e in et.entities for n in (e.id, *e.aliases)}
        for n in names:
            out.setdefault(n, set()).add(name)
    return out


def plain(word: str) -> bool:
    """A lower-case English word, or a plural/inflection of one ("liquidations")."""
    return bool(re.fullmatch(r"[a-z]+", word)) and is_word(word)


def literals(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, value) of every string literal that is not a docstring."""
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docs.add(id(body[0].value))
    return [
        (n.lineno, n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    ]


def test_no_pack_name_appears_in_ops_code():
    english = english_words()
    assert english, "the MiniLM vocabulary is needed to tell English words from names"
    names = pack_names()
    assert len(names) > 50  # the packs were read
    strict = sorted(n for n in names if not plain(n))
    loose = {n for n in names if plain(n)}
    # a name with a capital is matched as written (the code "LINK", not the word "link"),
    # one in lower case in any case
    strict_rx = re.compile(
        r"(?<![\w-])(?:"
        + "|".join(re.escape(n) if n != n.lower() else f"(?i:{re.escape(n)})" for n in strict)
        + r")(?![\w-])"
    )
    hits = []
    for path in sorted(OPS.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(OPS.parent)
        for i, line in enumerate(text.splitlines(), 1):
            for m in strict_rx.finditer(line):
                hits.append(f"{rel}:{i}: {m.group()!r}")
        for line_no, value in literals(ast.parse(text)):
            if value.strip().lower() in loose:
                hits.append(f"{rel}:{line_no}: the literal {value!r} (a pack name)")
    assert not hits, "domain names in ops/ code:\n" + "\n".join(hits)


def test_the_check_would_catch_a_name():
    """The patterns above do find a relation name written into code (the check is not vacuous)."""
    names = pack_names()
    src = 'KIND = "win_rate"\nx = "fee"\n'
    strict = [n for n in names if not plain(n)]
    assert "win_rate" in strict and "fee" in {n for n in names if plain(n)}
    assert any(value == "fee" for _l, value in literals(ast.parse(src)))
    assert re.search(r"(?<![\w-])win_rate(?![\w-])", src)
