"""People Detect + Canonicalize: find roster members in text and map a token to its name.

A :class:`PersonResolver` is built from a group's roster (and optional per-person
aliases). It resolves, case-insensitively:

* the exact roster name (``"Ana"``, ``"ana"``), and ``@handles`` (``"@ana"``);
* possessives (``"Ana's"``, ``"Ana’s"``, ``"Chris'"``);
* the first name of a multi-word name (``"Ana"`` for ``"Ana Ruiz"``) when no other
  roster member shares it, and the name with spaces/dots/underscores removed (``"anaruiz"``);
* configured aliases: per-person aliases (``{"Mother": ["Mum"]}``) and the synonym table
  :data:`DEFAULT_SYNONYMS` (``Mum``/``Mom``/``Mother``/``Mama`` are one person when the roster
  has one of them).

Ambiguous tokens (a first name two members share, an alias given to two people) resolve
to ``None`` rather than to a guess.

>>> r = PersonResolver(["Ana Ruiz", "Ben", "Mum"], aliases={"Ben": ["Benny"]})
>>> r.resolve("@ana"), r.resolve("Benny's"), r.resolve("mom"), r.resolve("Zoe")
('Ana Ruiz', 'Ben', 'Mum', None)
>>> [m[0] for m in r.mentions("Told Mom that Benny and Ana will come")]
['Mum', 'Ben', 'Ana Ruiz']
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping

#: Groups of words that name the same role; a roster member named by one of them is also
#: found under the others. Extend per deployment with ``PersonResolver(synonyms=...)``.
DEFAULT_SYNONYMS: tuple[tuple[str, ...], ...] = (
    ("mum", "mom", "mother", "mama", "mommy", "mummy", "ma"),
    ("dad", "father", "papa", "daddy", "pa"),
    ("grandma", "granny", "nan", "nana", "grandmother"),
    ("grandpa", "grandad", "granddad", "grandfather"),
)

_TOKEN = re.compile(r"@?[A-Za-z\u00C0-\u024F][\w\u00C0-\u024F.\-]*(?:['\u2019]s?)?")
_POSSESSIVE = re.compile(r"['\u2019]s?$")
#: what separates two names of a list: a comma, "and", "or", "&"
_LIST_GAP = re.compile(r"\s*(?:,|,?\s*(?:and|or|&))\s*", re.I)


def name_key(token: str) -> str:
    """Normalise a token: drop ``@``, possessive ``'s`` and trailing dots; lower-case."""
    token = _POSSESSIVE.sub("", token.strip().lstrip("@")).rstrip(".-")
    return token.lower()


def _squash(name: str) -> str:
    return re.sub(r"[\s._\-]+", "", name.lower())


class PersonResolver:
    """Resolve tokens and find mentions of a group's roster members.

    Parameters
    ----------
    roster
        Canonical speaker names of the group.
    aliases
        Extra names per roster member (``{"Ben": ["Benny", "B"]}``); nicknames, handles.
    synonyms
        Word groups that denote one role (default :data:`DEFAULT_SYNONYMS`).
    """

    def __init__(
        self,
        roster: Iterable[str],
        aliases: Mapping[str, Iterable[str]] | None = None,
        synonyms: Iterable[Iterable[str]] = DEFAULT_SYNONYMS,
    ):
        self.roster: tuple[str, ...] = tuple(dict.fromkeys(roster))
        candidates: dict[str, set[str]] = defaultdict(set)  # key -> names it may denote
        strong: dict[str, str] = {}  # exact names win over first names and synonyms
        for name in self.roster:
            strong[name.lower()] = name
            candidates[_squash(name)].add(name)
            parts = name.split()
            if len(parts) > 1:
                candidates[parts[0].lower()].add(name)
            for alias in (aliases or {}).get(name, ()):
                candidates[name_key(alias)].add(name)
        for group in synonyms:
            words = {w.lower() for w in group}
            hits = {strong[w] for w in words if w in strong}
            if len(hits) == 1:
                (name,) = hits
                for w in words - set(strong):
                    candidates[w].add(name)
        self._table: dict[str, str] = {
            k: next(iter(v)) for k, v in candidates.items() if len(v) == 1
        }
        self._table.update(strong)
        # multi-word keys (full names, multi-word aliases) are matched as phrases
        self._phrases = sorted((k for k in self._table if " " in k), key=len, reverse=True)

    def resolve(self, token: str) -> str | None:
        """The roster name ``token`` denotes, or ``None`` (unknown or ambiguous).

        Accepts ``@handles``, possessives and any case; multi-word input is matched whole.
        """
        if not token or not token.strip():
            return None
        key = name_key(token)
        return self._table.get(key) or self._table.get(_squash(key))

    def mentions(self, text: str) -> list[tuple[str, int, int]]:
        """Roster members mentioned in ``text`` as ``(name, start, end)`` character spans, in order.

        A member may appear several times; spans never overlap (full names win over parts).
        """
        found: list[tuple[str, int, int]] = []
        taken: list[tuple[int, int]] = []
        lower = text.lower()
        for phrase in self._phrases:
            for m in re.finditer(rf"(?<![\w@]){re.escape(phrase)}(?:['\u2019]s?)?(?!\w)", lower):
                found.append((self._table[phrase], m.start(), m.end()))
                taken.append((m.start(), m.end()))
        listed: list[tuple[str, int, int]] = []  # written as the roster writes it, but a word
        for m in _TOKEN.finditer(text):
            if any(s <= m.start() < e for s, e in taken):
                continue
            name = self.resolve(m.group())
            if name is None:
                continue
            if self._plausible(m.group(), name):
                found.append((name, m.start(), m.end()))
            elif _POSSESSIVE.sub("", m.group()) == name:
                listed.append((name, m.start(), m.end()))
        # such a word is a name where it is listed beside one ("Tess, ben and Lars")
        while listed:
            spans = [(s, e) for _, s, e in found]
            hits = [
                f
                for f in listed
                if any(
                    _LIST_GAP.fullmatch(text[e : f[1]]) or _LIST_GAP.fullmatch(text[f[2] : s])
                    for s, e in spans
                )
            ]
            if not hits:
                break
            found += hits
            listed = [f for f in listed if f not in hits]
        return sorted(found, key=lambda f: f[1])

    def _plausible(self, token: str, name: str) -> bool:
        """Short or common-word tokens count only when written like a name.

        ``"pa"``/``"ma"`` or a roster member called ``"Will"`` must not match the verb "will":
        lower-case tokens are accepted only for names of 4+ letters that are not common words,
        or written exactly as a lower-case roster name (a handle such as ``"mo"``).
        """
        bare = name_key(token)
        if token.startswith("@") or token[:1].isupper():
            return True
        if bare in _COMMON_WORDS:
            return False
        # a lower-case handle ("mo", "dev") written exactly as the roster writes it
        return len(bare) >= 4 or _POSSESSIVE.sub("", token) == name

    def names_in(self, text: str) -> list[str]:
        """Distinct roster names mentioned in ``text``, in order of first mention."""
        return list(dict.fromkeys(m[0] for m in self.mentions(text)))


#: Lower-case words that are also plausible first names; never taken as a mention in lower case.
_COMMON_WORDS = frozenset(
    "will mark rose bill grace hope joy may june april art ray jack pat sue faith dawn amber "
    "summer autumn rich frank don guy max ben sam kim lee mum mom dad ma pa nan".split()
)


def longest_list(text: str, mentions: list[tuple[str, int, int]]) -> list[str]:
    """The names of the longest run of ``mentions`` (spans in ``text``, in order) that ``text``
    lists one after another ("Tess, ben and Lars"); the last such run on a tie. In "once Lars had
    asked, which of the two did Tess or mo each prefer" the list is ``["Tess", "mo"]``: the
    asker is not in it."""
    runs: list[list[str]] = []
    end = None
    for name, start, stop in mentions:
        if runs and end is not None and _LIST_GAP.fullmatch(text[end:start]):
            if name not in runs[-1]:
                runs[-1].append(name)
        else:
            runs.append([name])
        end = stop
    return max(reversed(runs), key=len) if runs else []
