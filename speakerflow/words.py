"""The package's one word tokenizer, its stopword vocabulary and its change vocabulary.

It sits at the bottom of the layers (beside :mod:`speakerflow.settings`, importing nothing of
the package) because the BM25 index of :mod:`speakerflow.graphs.text_index` needs the same
words as the operators above it.

* :func:`words`: lower-cased ASCII letter and digit runs, the plain tokenizer of the BM25
  query, the hashing embedder, content comparison and quote shingles.
* :func:`count_tokens`: the budget tokens of a context (word runs and punctuation marks).
* :data:`STOPWORDS`: the base list, English function words (articles, pronouns, auxiliaries,
  prepositions, conjunctions, wh-words). Every other stopword set here is the base plus a
  named extension, each saying which job needs it and why.
* :data:`CHANGE_QUESTION`, :data:`CHANGE_OR_PAST_QUESTION`, :data:`CHANGE_STATEMENT`: the
  change vocabulary, the question sides sharing one core.

Jobs whose tokens must keep more than letter and digit runs (apostrophes of contractions,
capitals of names, accented letters) keep their own patterns beside their job.
"""

from __future__ import annotations

import re

WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    """The lower-cased letter and digit runs of ``text``, in order."""
    return WORD.findall(text.lower())


#: A budget token: a run of word characters or one punctuation character. Deterministic and
#: model-free; it over-counts slightly against BPE tokenisers on prose.
TOKEN = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    """Number of budget tokens in ``text`` (word runs + punctuation marks): how the query
    path's context and passive injection measure their budgets."""
    return len(TOKEN.findall(text))


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: The base: English function words. Alone, what a BM25 query leaves out
#: (:func:`speakerflow.graphs.text_index.query_terms`).
STOPWORDS = _set(
    """a an and are as at be but by did do does for from had has have he her hers him his how
    i if in into is it its me my of on or our she so that the their them they this to was we
    were what when where which who whom why will with you your"""
)

#: Further function words and chat interjections: they never say what a statement is about,
#: so a statement's content words (grounding, the rules Writer's topic words) leave them out;
#: a BM25 query keeps them (a negation or "before" can be what a question turns on).
MORE_FUNCTION_WORDS = _set(
    """also am been being can could doing having here just more most no nor not now off oh
    once only other ours out over own really should some such than theirs then there these
    those through too under until up very while would wow yeah yes yours"""
)

#: What a tokenizer that splits at apostrophes leaves of a contraction ("don't" -> don, t).
CONTRACTION_PIECES = _set("aren d didn doesn don isn let lets ll m re s t ve wasn weren won")

#: Chat words that say how something is said, not what it is about (fillers, evaluations,
#: time words, contractions whole): not topic words of the rules Writer's matter keys.
CHAT_WORDS = _set(
    """about above actually after again ago all already always amazing any anyone anything
    awesome back because before below between bit both can't congrats congratulations cool
    course day days definitely don't down during each even every everybody everyone everything
    fantastic feel few further get glad go going gonna good got great ha haha hear herself
    himself honestly i'd i'll i'm i've incredible it's itself kind know last let's like
    literally lol look looks lot lovely many maybe mine much myself never new next nice ok
    okay one ourselves pretty probably right said same say says see someone something
    sometimes sound sounds still super sure tell thank thanks that's themselves thing things
    think though thought time times today told tomorrow tonight usual usually way we'll we're
    we've week weeks well wonderful yesterday you're yourself yourselves"""
)

#: Words a question asks with, not about: roll-up and perception words say whose rows to
#: read ("what does everyone think"), not what the matter is.
QUESTION_WORDS = _set(
    """about all any anybody anyone been being can could each every everybody everyone feel
    feels felt group's member members no not onto out over people person said say says see
    sees should some than then there these think thinks those thought up view views whose
    would yes"""
)

#: The base words a question's matter may still be: the projection reads "but", "hers" and
#: "him" as matter words, as it always has (dropping them is a change to measure first).
QUESTION_MATTER_WORDS = _set("but hers him")

#: A statement's non-content words (:mod:`speakerflow.ops.write.grounding`, whose tokenizer
#: splits contractions at the apostrophe).
STATEMENT_STOPWORDS = STOPWORDS | MORE_FUNCTION_WORDS | CONTRACTION_PIECES

#: The rules Writer's non-topic words (its tokenizer keeps contractions whole).
TOPIC_STOPWORDS = STOPWORDS | MORE_FUNCTION_WORDS | CHAT_WORDS

#: A question's non-matter words (:mod:`speakerflow.ops.query.project`).
QUESTION_STOPWORDS = (STOPWORDS - QUESTION_MATTER_WORDS) | QUESTION_WORDS

#: The common English stopword list (NLTK's), as bm25s uses it for ``stopwords="en"``: the
#: base plus NLTK's further words, so that the plain bm25s baseline reproduces that library.
ENGLISH_STOPWORDS = STOPWORDS | _set(
    """about above after again against ain all am any aren aren't because been before being
    below between both can couldn couldn't d didn didn't doesn doesn't doing don don't down
    during each few further hadn hadn't hasn hasn't haven haven't having here herself himself
    isn isn't it's itself just ll m ma mightn mightn't more most mustn mustn't myself needn
    needn't no nor not now o off once only other ours ourselves out over own re s same shan
    shan't she's should should've shouldn shouldn't some such t than that'll theirs themselves
    then there these those through too under until up ve very wasn wasn't weren weren't while
    won won't wouldn wouldn't y you'd you'll you're you've yours yourself yourselves"""
)

# -- the change vocabulary ----------------------------------------------------------------------
#: Words of change that both kinds of question use.
#: "shift" as a verb ("her view shifted", "how did it shift?") or "a shift in", not the noun of
#: a work rota ("which shifts will she work")
_CHANGE_CORE = (
    r"chang\w*|no longer|any ?more|shift(?:ed|ing)|shift(?=\s*\?)|(?:a|any) shift (?:in|of)|"
    r"evolv\w*|switch\w*|became|become|"
    # a plan that moved: "how did the visit move?", "it was moved", "from when to when"
    r"mov(?:e|ed)(?=\s*\?)|(?:was|were|got|been|being|be) moved|"
    r"from (?:when|what|which|where|who)\b.{0,20}\bto (?:when|what|which|where|who)"
)

#: A question about how something changed (the answer's question type "change").
CHANGE_QUESTION = re.compile(rf"\b({_CHANGE_CORE}|develop\w*|progress\w*)\b", re.I)

#: A question about a change or about the past: the projection then reads the whole history
#: of a matter, earlier values included.
CHANGE_OR_PAST_QUESTION = re.compile(
    rf"\b({_CHANGE_CORE}|used to|originally|at first|initially|before|earlier|previous(ly)?|"
    r"over time|revis\w*|at the time|back (in|then)|history)\b",
    re.I,
)

#: A statement announcing a change of mind or of state ("I switched", "not any more"): the
#: rules Writer then updates the matter's earlier record. It is narrower than the question
#: side ("switched", not every form of "switch"), as the Writer has always read it.
CHANGE_STATEMENT = re.compile(
    r"\b(changed my mind|now|anymore|no longer|moved|switched|instead|update|used to|not any "
    r"more)\b",
    re.I,
)
