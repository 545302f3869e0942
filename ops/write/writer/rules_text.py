"""Text helpers of the rules Writer: sentences, triggers, person rewriting, matter (slot) keys.

Everything here is general English surface cues, never names or data-set specifics.

A *matter key* says which slot a statement fills, so a later statement on the same slot
becomes an UPDATE. It is ``"<family>:<topic words>"``:

* single-valued families (:data:`SINGLE_VALUED`: residence, job, relationship, budget,
  deadline, health) hold one current value per owner: any later statement of the same
  family by the same owner continues the slot ("I live in Munich" -> "I live in Vienna");
* ``habit:<verb>``: a recurring behaviour, keyed by its main verb lemma ("book", "run");
  seeing it again is an UPDATE that records the new occurrence;
* other families (preference, stance, plan, fact ...) continue a slot when their topic
  words overlap (Jaccard >= 1/3), or, for preferences and stances, when one side names
  no topic at all ("Either works for me" -> "I prefer Porto").

Topic words are lower-cased content words (stopwords, pronouns, fillers, roster names and
trigger words removed), crudely lemmatised (plural ``-s`` dropped).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from speakerflow.words import TOPIC_STOPWORDS

# sentence ends: punctuation, line breaks, spaced dashes, and emoji (chat punctuation)
_SENT_END = re.compile(
    r"(?<=[.!?])\s+|\n+|\s+[-\u2013\u2014]\s+|\s*[\U0001F300-\U0001FAFF\u2600-\u27BF\uFE0F]+\s*"
)
_QUESTION_START = re.compile(
    r"^\W*(?:(?:are|do|did|have|has|can|could|will|would|is|was|were|does|shall)\s+"
    r"(?:you|we|they|he|she|it|u)\b|(?:what|how|when|where|why|who|which|anyone)\b)",
    re.I,
)
_WORD = re.compile(r"[A-Za-z\u00C0-\u024F][A-Za-z\u00C0-\u024F'\u2019]*|\d+(?:[.,]\d+)?")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_LEAD_FILLER = re.compile(
    r"^(?:(?:yes|yeah|yep|ok|okay|so|well|great|right|sure|and|but|also|oh|ah|aw|haha+|lol|hmm+|"
    r"honestly|"
    r"nice|cool|true|fair|anyway|btw|by the way|quick update|update|fine(?! (?:by|with)\b)|"
    r"guys|same|wait|ngl|tbh|omg|wow|legend|"
    r"just|actually|literally|please|hey|hi|hello|um+|uh+|lmao|agreed|i mean|to be fair)"
    r"\b[\s,:!.]*)+",
    re.I,
)

#: Cue words of stances and preferences: they say HOW someone holds a matter, not WHAT it is,
#: so they are not topic words ("I prefer Lisbon" and "I prefer Porto" are one matter).
CUE_WORDS = frozenset(
    """prefer prefers preferred rather love loves hate hates enjoy enjoys works work fine either
    neither both
    changed change mind believe believes reckon guess agree agrees disagree doubt hope vote pick
    keen fan
    favourite favorite better worse best worst""".split()
)

#: Trigger patterns, compiled case-insensitive. A sentence can match several; the Writer
#: takes the first kind in the order decision > norm > proposal.
DECISION = re.compile(
    r"\b(let['\u2019]s (?!see\b|be honest\b|not\b)[a-z]+"
    r"|(?:it|that)(?:'s| is) (?:settled|decided|final|official|confirmed|locked in)|settled[:,]"
    r"|we(?:'ve| have)? (?:all )?agreed|we(?:'re| are)? going with|we(?:'ll| will) go with|final "
    r"(?:call|decision|answer)"
    r"|(?:is|are|was|has been) decided|we(?:'ve| have)? decided|the decision is|decision:|the plan "
    r"is"
    r"|confirmed[:,]|done deal|booked it for (?:us|everyone|the group))",
    re.I,
)
NORM = re.compile(
    r"\b(we (?:always|never|usually|normally|traditionally)|every(?:one|body) (?:should|must|has "
    r"to|needs to|is expected)"
    r"|(?:no ?one|nobody) (?:should|is allowed|may|gets to)|the (?:rule|norm|deal|tradition) is|"
    r"(?:our|house|group|golden) rule"
    r"|as a rule|we (?:should|must) (?:always|never)|(?:it's|it is) (?:a|our) tradition|we tend to|"
    r"we make a point"
    r"|(?:not|never) allowed|rule of thumb|in this group we|(?:every|each) (?:time|year|month|"
    r"week) we|whenever we"
    r"|we(?:'ve| have) been [a-z]+ing|our (?:thing|tradition|usual)|as a group|(?:this|the) group "
    r"(?:always|never|usually))",
    re.I,
)
PROPOSAL = re.compile(
    r"\b(we should|we need to|we have to|we must|we could|how about we|why don't we)\b", re.I
)
PLAN = re.compile(r"\b(we['\u2019]ll|we will|we['\u2019]re going to|we are going to)\b", re.I)
#: A reply that agrees with what was just proposed or decided (consensus evidence).
AGREEMENT = re.compile(
    r"^\W*(agreed|same|\+1|me too|yes|yep|yeah|sounds (?:good|great|perfect)|works for me|deal|"
    r"i'?m in|count me in|love (?:that|this|it)|perfect|absolutely|definitely|fine by me|"
    r"totally)\b",
    re.I,
)
PREFERENCE = re.compile(
    r"\b(prefer|rather|favou?rite|love|loves|hate|can'?t stand|enjoy|works for me|(?:is|are) fine "
    r"(?:by|with|for) me"
    r"|fine (?:by|with) me|vote for|i'?d go with|my pick|keen on|not a fan|big fan|into)\b",
    re.I,
)
STANCE = re.compile(
    r"\b(think|believe|feel|reckon|guess|agree|disagree|in my (?:view|opinion)|imo|doubt|worried|"
    r"concerned"
    r"|hope|sure that|not sure|should|shouldn't|better|worse|too \w+)\b",
    re.I,
)
HABIT = re.compile(
    r"\b(always|never|usually|normally|as usual|of course|again|every (?:single )?(?:day|morning|"
    r"evening|night|week|weekend|time|year|month)"
    r"|each (?:morning|day|week|time)|habit|tend to|routinely|whenever|as always|per usual)\b",
    re.I,
)
FAMILIES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "residence",
        re.compile(
            r"\b(live[sd]? in|living in|moved (?:to|again|there|here|back)|moving to|based in|"
            r"relocat\w*|(?:i|we) live)\b",
            re.I,
        ),
    ),
    (
        "job",
        re.compile(
            r"\b(work(?:ing|s)? (?:at|for|as)(?! me\b| us\b)|my job|new job|job at|promoted|"
            r"promotion|got hired|quit my|role as|position as|started at|joined \w+ as)\b",
            re.I,
        ),
    ),
    # status words only: "my partner" is a mention, not a relationship status
    (
        "relationship",
        re.compile(
            r"\b(got married|getting married|engaged|divorc\w*|broke up|separated|(?:i'?m|i am) "
            r"(?:single|dating|seeing someone))\b",
            re.I,
        ),
    ),
    # a budget is named as one; a price mentioned in passing is not the group's budget
    (
        "budget",
        re.compile(r"\b(budget|per (?:person|head)|spend(?:ing)? (?:limit|cap)|cost cap)\b", re.I),
    ),
    (
        "deadline",
        re.compile(
            r"\b(deadline|due (?:on|by|date)|by (?:monday|tuesday|wednesday|thursday|friday|"
            r"saturday|sunday|the end of \w+))\b",
            re.I,
        ),
    ),
    (
        "health",
        re.compile(
            r"\b(injur\w*|sick|hospital|surgery|recover\w*|pregnan\w*|vegetarian|vegan|allerg\w*|"
            r"diagnos\w*)\b",
            re.I,
        ),
    ),
    ("preference", PREFERENCE),
    ("stance", STANCE),
)
SINGLE_VALUED = frozenset({"residence", "job", "relationship", "budget"})
OPEN_TOPIC = frozenset({"preference", "stance"})

_FIRST = [  # (pattern, replacement) for first-person -> third-person; {n} is the name
    (r"\bI'?m\b", "{n} is"),
    (r"\bI am\b", "{n} is"),
    (r"\bI'?ve\b", "{n} has"),
    (r"\bI have\b", "{n} has"),
    (r"\bI'?ll\b", "{n} will"),
    (r"\bI'?d\b", "{n} would"),
    (r"\bI was\b", "{n} was"),
    (r"\bmyself\b", "{n}"),
    (r"\bmine\b", "{n}'s"),
    (r"\bmy\b", "{n}'s"),
    (r"\bme\b", "{n}"),
]
_SECOND = [
    (r"\byou'?re\b", "{n} is"),
    (r"\byou are\b", "{n} is"),
    (r"\byou'?ve\b", "{n} has"),
    (r"\byou have\b", "{n} has"),
    (r"\byou were\b", "{n} was"),
    (r"\byou'?ll\b", "{n} will"),
    (r"\byou'd\b", "{n} would"),
    (r"\byourself\b", "{n}"),
    (r"\byours\b", "{n}'s"),
    (r"\byour\b", "{n}'s"),
    (r"\byou\b", "{n}"),
]
_MODALS = frozenset(
    """can cannot could will would should might must may shall did was were had ran went got made
    took saw came found
    thought said told bought left felt kept met paid sent spent won lost wrote read ate drove flew
    gave knew
    began became brought caught put set cut let hit quit sold taught understood woke wore
    misunderstood stood heard misheard meant slept sat held built chose forgot spoke broke fell
    grew threw drank swam sang rode led fed hid fought sought stuck struck swung wept
    forgave""".split()
)
#: adverbs between a subject and its verb; the verbs ending in -ly are not adverbs
_ADVERB = (
    r"(?!(?:ap|re|sup|multi|im|com)?ply\b|(?:re|f|al)ly\b)[a-z]+ly|still|also|just|now|never|"
    r"always|often|already|even|totally|kind of|sort of|last|first|once|then"
)
_NEGATED = {"don't": "doesn't", "dont": "doesn't", "haven't": "hasn't", "am": "is", "are": "is"}
_AUX_START = re.compile(
    r"^\W*(?:are|do|did|is|have|has|can|could|will|would|should|were|was)\b", re.I
)
_ELIDED_START = frozenset(
    "just still finally also currently been got had went started working building heading moved "
    "booked "
    "finished ran bought made took left joined quit".split()
)


def sentences(text: str) -> list[str]:
    """Split a message into sentences (punctuation, line breaks and dashes end one)."""
    return [s.strip() for s in _SENT_END.split(text) if s and s.strip()]


def is_question(sentence: str) -> bool:
    """A question: ends with "?" or opens like one ("are you ...", "what ...")."""
    return sentence.rstrip().endswith("?") or bool(_QUESTION_START.match(sentence))


def strip_filler(sentence: str) -> str:
    """Drop leading interjections ("Yes, ", "Great, ", "Haha ") and capitalise what is left."""
    rest = _LEAD_FILLER.sub("", sentence).strip()
    return rest[:1].upper() + rest[1:] if rest else ""


def words(text: str) -> list[str]:
    return [w.lower().replace("\u2019", "'") for w in _WORD.findall(text)]


def lemma(word: str) -> str:
    """A crude lemma: lower case, possessive and plural ``-s`` dropped (not for ``-ss``)."""
    w = word.lower().replace("\u2019", "'").removesuffix("'s")
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 5 and w.endswith(("ches", "shes", "xes", "sses", "zzes")):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def topic_words(text: str, exclude: Iterable[str] = ()) -> set[str]:
    """Content-word lemmas of ``text`` (what the matter is about), minus ``exclude`` words."""
    skip = {e.lower() for e in exclude}
    return {
        lemma(w)
        for w in words(text)
        if w not in TOPIC_STOPWORDS
        and w not in CUE_WORDS
        and lemma(w) not in skip
        and len(w) > 2
        and not _NUMBER.fullmatch(w)
    }


def numbers(text: str) -> set[str]:
    return set(_NUMBER.findall(text))


def family(text: str) -> str:
    """The slot family of a statement (see module docstring); ``fact`` when none matches."""
    for name, pattern in FAMILIES:
        if name in SINGLE_VALUED and pattern.search(text):
            return name
    if HABIT.search(text):
        return "habit"
    for name, pattern in FAMILIES:
        if pattern.search(text):
            return name
    return "fact"


def habit_verb(text: str, exclude: Iterable[str] = ()) -> str:
    """Main verb lemma of a habitual statement: the first content word that is not a time word."""
    skip = {e.lower() for e in exclude} | {
        "morning",
        "day",
        "evening",
        "night",
        "usual",
        "course",
        "single",
        "keep",
        "keeps",
        "kept",
        "keeping",
        "again",
    }
    for w in words(text):
        if w not in TOPIC_STOPWORDS and w not in skip and len(w) > 2 and not _NUMBER.fullmatch(w):
            base = w[:-3] if w.endswith("ing") and len(w) > 5 else w
            base = base[:-2] if base.endswith("ed") and len(base) > 4 else base
            return lemma(base)
    return "behaviour"


def _agree(verb: str) -> str:
    """Third-person singular of a present-tense verb ("prefer" -> "prefers")."""
    low = verb.lower().replace("\u2019", "'")
    if low in _NEGATED:
        return _NEGATED[low]
    if low in _MODALS or low.endswith(("ed", "s")) or not low.isalpha():
        return verb
    if low in ("have", "do", "go", "am", "are"):
        return {"have": "has", "do": "does", "go": "goes", "am": "is", "are": "is"}[low]
    if low.endswith(("sh", "ch", "x", "z", "o")):
        return verb + "es"
    if low.endswith("y") and len(low) > 2 and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def third_person(sentence: str, speaker: str, addressee: str | None = None) -> str:
    """Rewrite the speaker's first person (and "you" as ``addressee``) in the third person.

    >>> third_person("I live in Munich now, my flat is small", "Dev")
    "Dev lives in Munich now, Dev's flat is small"
    >>> third_person("you still run every morning", "Ben", addressee="Chloe")
    'Chloe still runs every morning'
    """
    out = sentence
    for pattern, repl in _FIRST:
        out = re.sub(
            pattern,
            _unless_title(repl.format(n=speaker)),
            out,
            flags=re.I if pattern != r"\bI'?d\b" else 0,
        )
    out = re.sub(
        rf"\bI\s+((?:(?:{_ADVERB})\s+)*)([a-z']+)\b",
        lambda m: (
            f"{speaker} {m.group(1)}" + (m.group(2) if _after_modal(m) else _agree(m.group(2)))
        ),
        out,
    )
    out = re.sub(r"\bI\b", speaker, out)
    if addressee:
        asking = bool(_AUX_START.match(out) or _QUESTION_START.match(out)) or out.rstrip().endswith(
            "?"
        )
        if not asking:  # in questions ("how long have you been") no verb agrees with "you"
            # "you" opening a clause is a subject and its verb agrees ("you still run" -> "Chloe
            # still runs", past any adverbs before it); elsewhere it is an object ("on you
            # then", "bring you joy") and nothing changes
            out = re.sub(
                r"((?:^|[,.;:!]\s+|\b(?:and|but|so|that|because|since|while|when|if|as|thinks?|"
                r"hopes?|bets?|"
                rf"guess(?:es)?|knows?|heard|believes?)\s+)\W*)you\s+((?:(?:{_ADVERB})\s+)*)"
                r"([a-z]+)\b",
                lambda m: f"{m.group(1)}{addressee} {m.group(2)}" + _agree(m.group(3)),
                out,
                flags=re.I,
            )
        for pattern, repl in _SECOND:
            out = re.sub(pattern, _unless_title(repl.format(n=addressee)), out, flags=re.I)
    return out


#: words after which a verb is a bare infinitive ("could I swap", "should I bring")
_BARE_AFTER = frozenset(
    "can could will would shall should may might must do does did to let cannot".split()
)


def _after_modal(m: re.Match) -> bool:
    """Does the pronoun of ``m`` follow a modal or "do" (an inverted question)?"""
    before = m.string[: m.start()].split()
    return bool(before) and before[-1].lower().strip(",") in _BARE_AFTER


def _unless_title(repl: str) -> Callable[[re.Match], str]:
    """A replacement of a pronoun that keeps a capitalised one inside a sentence: "Me",
    "You", "My" after a word or a comma are a title's words ("Lean On Me"), not a person.
    "I" is always capitalised, so it is always replaced."""

    def sub(m: re.Match) -> str:
        said = m.group(0)
        if said[0].isupper() and not said.startswith("I"):
            before = m.string[: m.start()].rstrip()
            if before and before[-1] not in ".!?:;\"'(\u2014-":
                return said
        return repl

    return sub


def first_person(sentence: str) -> bool:
    """Does the sentence speak about the speaker ("I", "my", "me", or an elided subject)?"""
    if re.search(
        r"\b(?:I|I'm|I've|I'll|I'd|(?i:my|me|mine|myself))\b", sentence.replace("\u2019", "'")
    ):
        return True
    first = words(sentence)[:1]
    return bool(first) and (
        first[0] in _ELIDED_START or (first[0].endswith("ed") and len(first[0]) > 4)
    )


def elided_to_third(sentence: str, speaker: str) -> str:
    """ "Booked mine weeks ago" -> "Ben booked Ben's weeks ago" (subject restored when elided)."""
    text = third_person(sentence, speaker)
    first = words(sentence)[:1]
    elided = bool(first) and (
        first[0] in _ELIDED_START or (first[0].endswith("ed") and len(first[0]) > 4)
    )
    if text.startswith(speaker) or not elided:
        return text
    return f"{speaker} {text[:1].lower()}{text[1:]}"
