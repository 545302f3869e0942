"""speakerflow.words: the tokenizer, the stopword sets built from one base, the change words."""

from speakerflow import words as w


def test_words_are_lower_case_letter_and_digit_runs():
    assert w.words("Ana's 2nd TRY, at 5pm!") == ["ana", "s", "2nd", "try", "at", "5pm"]


def test_every_stopword_set_extends_the_base():
    for extended in (w.STATEMENT_STOPWORDS, w.TOPIC_STOPWORDS, w.ENGLISH_STOPWORDS):
        assert w.STOPWORDS <= extended
    # a question's set is the base less the words a question's matter may be, plus its own
    assert w.QUESTION_MATTER_WORDS <= w.STOPWORDS
    assert w.QUESTION_STOPWORDS == (w.STOPWORDS - w.QUESTION_MATTER_WORDS) | w.QUESTION_WORDS
    assert not w.QUESTION_MATTER_WORDS & w.QUESTION_STOPWORDS


def test_change_questions_share_their_core_and_statements_are_narrower():
    for question in ("How did her view change?", "Is he no longer coming?"):
        assert w.CHANGE_QUESTION.search(question)
        assert w.CHANGE_OR_PAST_QUESTION.search(question)
    assert w.CHANGE_OR_PAST_QUESTION.search("What did they want at first?")
    assert not w.CHANGE_QUESTION.search("What did they want at first?")
    assert w.CHANGE_STATEMENT.search("I switched to tea")
    assert not w.CHANGE_STATEMENT.search("I am switching to tea")
