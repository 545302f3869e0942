"""How the rules Writer words a record: kinds of statements, merged statements, the owner
and source left out where the record's fields say them, views attributed to their holder,
relative dates resolved beside their words, and the helpers of consolidated content."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from speakerflow.ops.text.temporal import describe as describe_time
from speakerflow.ops.text.temporal import resolve as resolve_time
from speakerflow.ops.write.writer import rules_text as rt


@dataclass
class Slot:
    """A head the Writer can continue: an existing record or an ADD made in this segment."""

    entry_id: str
    owner: str
    source: str
    layer: str
    family: str
    topics: set[str]
    content: str
    from_ids: list[str] = field(default_factory=list)
    utype: str = "fact"
    #: the ADD action when the record is made in this segment (continuations merge into it)
    pending: dict[str, Any] | None = None


#: record kinds that hold a view (one current view per matter: a later one supersedes)
VIEWS = frozenset({"preference", "stance"})


def utype_of(sentence: str, profile: bool = False) -> str:
    if rt.HABIT.search(sentence):
        return "observation"
    if profile:
        return "observation"
    if rt.PREFERENCE.search(sentence):
        return "preference"
    if rt.STANCE.search(sentence):
        return "stance"
    return "fact"


def merge_statements(
    candidates: list[tuple[dict[str, Any], str, set[str]]], any_matter: bool = False
) -> list[tuple[dict[str, Any], str, set[str]]]:
    """Join consecutive statements of one message on one matter kind into one record.

    Same owner, source, layer and slot family (facts with facts, stances with stances)
    are joined with "; " (a message's "TechCrunch covered us. Close to profitability."
    is one fact record); single-valued families and habits stay apart so their slots
    keep updating on their own.
    """
    out: list[tuple[dict[str, Any], str, set[str]]] = []
    for act, fam, topics in candidates:
        prev = out[-1] if out else None
        if (
            prev is not None
            and fam not in rt.SINGLE_VALUED  # a single-valued slot keeps updating on its own
            and prev[1] not in rt.SINGLE_VALUED
            # a preference is its own slot: a later "I prefer Porto now" updates it alone
            and (fam == "preference") == (prev[1] == "preference")
            and (
                (any_matter and act["owner"] == act["source"])
                or (fam == prev[1] and fam != "habit")
            )
            and (topics or any_matter)
            and (prev[2] or any_matter)
            and all(prev[0][k] == act[k] for k in ("owner", "source", "layer"))
        ):
            merged = {**prev[0], "content": f"{prev[0]['content'].rstrip('.')}; {act['content']}"}
            out[-1] = (merged, fam, prev[2] | topics)
        else:
            out.append((act, fam, topics))
    return out


def attributed(content: str, source: str) -> str:
    """A view of another member in its holder's words: "Ana says ...", "Ana asks ..."."""
    if content.startswith(source):
        return content
    if content.startswith("asked: "):
        return f"{source} asks {_lower_first(content.removeprefix('asked: '))}"
    return f"{source} says {_lower_first(content)}"


def _lower_first(text: str) -> str:
    """Lower-case the first letter unless the first word is a name or "I" ("Ben's" stays)."""
    first = text.split(" ", 1)[0]
    if not first or first == "I" or first.startswith("I'") or not first[:1].isupper():
        return text
    if len(first) > 1 and not first[1:].islower():  # "WRONG", "TechCrunch"
        return text
    return text[:1].lower() + text[1:] if first.lower() in _COMMON_OPENERS else text


#: Sentence-opening words that are not names (lower-cased when a clause follows "says").
_COMMON_OPENERS = frozenset(
    """the a an this that these those it its there here he she they we you his her their our
    your what how when where why who which if so but and or not no yes just still also
    maybe probably definitely really honestly anyway all every each some any one both
    glad good great nice sounds looks seems can could would should will did does do is are
    was were has have had""".split()
)


def concise(
    content: str, owner: str, source: str, elide: bool = False, keep_owner: bool = False
) -> str:
    """Drop what the record's fields already say: "<source> says: ", "(said by <source>)",
    and the owner as the opening subject ("Dev lives in Vienna" -> "lives in Vienna")."""
    content = content.removeprefix(f"{source} says: ").removesuffix(f" (said by {source})")
    m = re.match(rf"{re.escape(owner)}\s+(?=[a-z])", content)
    # a view of another member keeps them as its subject: it opens with its source ("Ana says
    # Ben returns ..."), so the owner is not the opening word
    content = content[m.end() :] if m and not (keep_owner and owner != source) else content
    if elide and owner == source:
        # a self-report names its owner nowhere: the owner field does ("Mei's team is at eight
        # so Mei will need a hard stop" -> "team is at eight so will need a hard stop")
        name = re.escape(owner)
        content = re.sub(rf"\b{name}['\u2019]s\s+(?=\w)", "", content)
        content = re.sub(
            rf"(^|[,;:]\s+|\b(?:but|so|because|that|if|when|though|as)\s+){name}\s+"
            r"(?=[a-z])",
            r"\1",
            content,
        )
    # trailing chat fillers say nothing about the matter
    content = re.sub(
        r"[\s,]+(?:ngl|tbh|lol|haha+|honestly|please|though|anyway|tho)\W*$",
        "",
        content,
        flags=re.I,
    )
    return content.strip() or content


def said(sentence: str, speaker: str) -> str:
    """A group record's content: the sentence with the speaker's "I" rewritten, and who said it."""
    return f"{rt.third_person(sentence, speaker)} (said by {speaker})"


def dated(content: str, ts: Any) -> str:
    """Relative time words resolved against the message time, written beside them.

    "went to the support group yesterday" said on 8 May 2023 ->
    "went to the support group yesterday (7 May 2023)" (:mod:`speakerflow.ops.text.temporal`);
    expressions that already carry a year stay as they are.
    """
    if not hasattr(ts, "year") or not re.search(_TIME_HINT, content, re.I):
        return content
    out, shift = content, 0
    for span in resolve_time(content, ts):
        if re.search(r"\b\d{4}\b", span.text) or _BARE_WEEKDAY.match(span.text):
            # already absolute; a bare weekday is as often a habit ("on Sundays") as a date
            continue
        at = span.offset + shift + len(span.text)
        if _MONTH_AFTER.match(out, at):
            continue  # "a long weekend in October", "the last Saturday of July": not this week's
        desc = describe_time(span)
        opening = re.match(r"(?:in|on|of|by|at|during)\s+", span.text, re.I)
        lead = opening.group(0) if opening else ""
        if set(rt.words(span.text[len(lead) :])) <= set(rt.words(desc)):
            # "in October" -> "in October 2025", not "in October (October 2025)"
            start = span.offset + shift
            out = out[:start] + lead + desc + out[at:]
            shift += len(lead) + len(desc) - len(span.text)
            continue
        note = f" ({desc})"
        out = out[:at] + note + out[at:]
        shift += len(note)
    return out


_MONTH_AFTER = re.compile(
    r"\s+(?:in|of)\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b", re.I
)


_BARE_WEEKDAY = re.compile(
    r"^(?:on |by |this )?(?:mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|sat(?:ur)?|sun)(?:day)?s?$", re.I
)


#: words without which no time expression can match (skips the resolver for most sentences)
_TIME_HINT = (
    r"\b(?:ago|yesterday|today|tonight|tomorrow|last|next|this|week|weekend|month|year|morning|"
    r"night|"
    r"mon|tue|wed|thu|fri|sat|sun|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|day|days|in \d)"
)


def stats_order(msg_id: str, known: list[dict[str, Any]]) -> int:
    """Position of a message among those the segment sees (for citing in said order)."""
    for i, m in enumerate(known):
        if m["msg_id"] == msg_id:
            return i
    return -1


def cap(ids: list[str], n: int, keep_first: bool = False) -> list[str]:
    """At most ``n`` ids: the newest, or (``keep_first``) the first and the newest ``n - 1``.

    A record's messages are cited together at its rank in a composed answer, so a long list
    would push other evidence out; the older messages of a thread stay cited by its earlier
    records (the UPDATE chain)."""
    if len(ids) <= n:
        return ids
    return [ids[0], *ids[len(ids) - n + 1 :]] if keep_first and n > 1 else ids[-n:]


def last_clause(content: str) -> str:
    """The newest statement of a (possibly consolidated) record, without its notes: the last
    of its "; "-joined statements outside parentheses (a note quotes older ones, dates in
    parentheses included), less a closing "(before, ...)" / "(again, ...)" note."""
    depth, start, note = 0, 0, None
    for i, ch in enumerate(content):
        if ch == "(":
            if depth == 0 and content.startswith(("(before, ", "(again, "), i):
                note = i
            depth += 1
        elif ch == ")":
            depth = max(depth - 1, 0)
        elif depth == 0 and content.startswith("; ", i):
            start, note = i + 2, None
    return content[start:note].strip()


def thread_content(old: str, new: str, keep: int) -> str:
    """A thread's content: its newest ``keep`` statements joined with "; " (oldest first)."""
    parts = [p for p in old.split("; ") if p] + [new]
    parts = list(dict.fromkeys(p.strip() for p in parts))
    return "; ".join(parts[-keep:])


def day_str(ts: Any) -> str:
    return ts.strftime("%Y-%m-%d") if hasattr(ts, "strftime") else str(ts)[:10]
