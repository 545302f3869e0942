"""Temporal expressions resolved against the time a message was said (written before the module).

Reference days used below: Friday 10 April 2026, Monday 8 May 2023, Friday 6 March 2026.
"""

from datetime import UTC, date, datetime

from speakerflow.ops.text.temporal import TimeSpan, describe, resolve, resolve_first

FRI = datetime(2026, 4, 10, 10, 33, tzinfo=UTC)  # Friday
MON = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # Monday
FRI_MAR = datetime(2026, 3, 6, 14, 0, tzinfo=UTC)  # Friday


def span(text: str, ref=FRI) -> tuple[date, date]:
    s = resolve_first(text, ref)
    assert s is not None, text
    return s.start, s.end


def test_single_days():
    assert span("I booked my flight to Porto yesterday.") == (date(2026, 4, 9),) * 2
    assert span("I'll call the venue tomorrow morning.") == (date(2026, 4, 11),) * 2
    assert span("Today I finally finished the report.") == (date(2026, 4, 10),) * 2
    assert span("We watched the match last night.") == (date(2026, 4, 9),) * 2
    assert span("She arrived the day before yesterday.") == (date(2026, 4, 8),) * 2
    assert span("The results come the day after tomorrow.") == (date(2026, 4, 12),) * 2
    assert span("I went to the support group yesterday.", MON) == (date(2023, 5, 7),) * 2


def test_counted_offsets():
    assert span("I adopted the dog two weeks ago.") == (date(2026, 3, 27),) * 2
    assert span("We moved here 3 days ago.") == (date(2026, 4, 7),) * 2
    assert span("He quit a month ago.") == (date(2026, 3, 10),) * 2
    assert span("I started painting a year ago.") == (date(2025, 4, 10),) * 2
    assert span("The launch is in two weeks.") == (date(2026, 4, 24),) * 2
    assert span("a couple of days ago my bike broke") == (date(2026, 4, 8),) * 2
    few = resolve_first("I met her a few days ago.", FRI)
    assert few.approx and few.start < few.end < date(2026, 4, 10)


def test_weeks_months_years_and_weekends():
    assert span("I was sick all last week.") == (date(2026, 3, 30), date(2026, 4, 5))
    assert span("Let's meet next week.") == (date(2026, 4, 13), date(2026, 4, 19))
    assert span("This week has been hectic.") == (date(2026, 4, 6), date(2026, 4, 12))
    assert span("We went hiking last weekend.") == (date(2026, 4, 4), date(2026, 4, 5))
    assert span("Any plans for this weekend?") == (date(2026, 4, 11), date(2026, 4, 12))
    assert span("I went camping last weekend.", MON) == (date(2023, 5, 6), date(2023, 5, 7))
    assert span("Dev moved to Munich last month.", FRI_MAR) == (date(2026, 2, 1), date(2026, 2, 28))
    assert span("The new job starts next month.") == (date(2026, 5, 1), date(2026, 5, 31))
    assert span("Prices went up last year.") == (date(2025, 1, 1), date(2025, 12, 31))


def test_weekdays_follow_the_tense():
    assert span("I ran a 10k last Saturday.") == (date(2026, 4, 4),) * 2
    assert span("We'll decide next Tuesday.") == (date(2026, 4, 14),) * 2
    assert span("I went to the museum on Sunday.", MON) == (date(2023, 5, 7),) * 2
    assert span("I will go to the museum on Sunday.", MON) == (date(2023, 5, 14),) * 2
    assert (
        span("Let's decide on the city by Friday.", datetime(2026, 3, 2, 9, 33, tzinfo=UTC))
        == (date(2026, 3, 6),) * 2
    )


def test_months_dates_and_ranges():
    assert span("We need a venue for the offsite in May.", datetime(2026, 3, 2, tzinfo=UTC)) == (
        date(2026, 5, 1),
        date(2026, 5, 31),
    )
    assert span("I visited my parents in December.", MON) == (date(2022, 12, 1), date(2022, 12, 31))
    # the nearest May, though the verb is past: the race is ahead
    assert span("I signed up for the charity run in May!", datetime(2025, 3, 17, tzinfo=UTC)) == (
        date(2025, 5, 1),
        date(2025, 5, 31),
    )
    assert span("the offsite will be in Porto, 12 to 14 May.", FRI_MAR) == (
        date(2026, 5, 12),
        date(2026, 5, 14),
    )
    assert span("Book flights by the end of March.", FRI_MAR)[1] == date(2026, 3, 31)
    assert span("Last week of August so everyone can come!", FRI_MAR) == (
        date(2026, 8, 25),
        date(2026, 8, 31),
    )
    assert span("The concert was on 3 June 2022.", MON) == (date(2022, 6, 3),) * 2
    assert span("The deadline is May 20.", MON) == (date(2023, 5, 20),) * 2


def test_the_day_before_is_anchored_to_the_last_date_said():
    spans = resolve("The race was on 12 May 2023 and I trained hard the day before.", MON)
    assert [(s.start, s.end) for s in spans] == [(date(2023, 5, 12),) * 2, (date(2023, 5, 11),) * 2]
    assert (
        span("I met them the day before.", MON) == (date(2023, 5, 7),) * 2
    )  # no anchor: the message day


def test_no_time_and_offsets():
    assert resolve("I prefer Lisbon, the flights are cheap.", FRI) == []
    assert resolve("May I ask a question?", FRI) == []  # a modal verb, not the month
    text = "I booked my flight yesterday."
    s = resolve_first(text, FRI)
    assert text[s.offset : s.offset + len(s.text)] == "yesterday"


def test_describe():
    assert describe(resolve_first("yesterday", MON)) == "7 May 2023"
    assert describe(resolve_first("last month", FRI_MAR)) == "February 2026"
    assert describe(resolve_first("last year", FRI)) == "2025"
    assert describe(resolve_first("last weekend", MON)) == "6-7 May 2023"
    assert describe(resolve_first("last week", FRI)) == "30 March-5 April 2026"
    assert describe(resolve_first("12 to 14 May", FRI_MAR)) == "12-14 May 2026"
    assert "before 10 April 2026" in describe(resolve_first("a few days ago", FRI))
    assert isinstance(resolve_first("today", FRI), TimeSpan)
    assert (
        describe(resolve_first("last week", FRI), anchored=True)
        == "the week before 10 April 2026 (30 March-5 April 2026)"
    )
    assert (
        describe(resolve_first("this weekend", FRI), anchored=True)
        == "the weekend after 10 April 2026 (11-12 April 2026)"
    )


THU = datetime(2026, 3, 26, 20, 0, tzinfo=UTC)  # Thursday


def test_an_explicit_date_beats_its_weekday_and_is_marked_explicit():
    [s] = resolve("the vet appointment is Monday 4 May at ten", THU)
    assert (s.start, s.explicit) == (date(2026, 5, 4), True)
    [s] = resolve("Sunday the 3rd suits me", THU)  # 3 May 2026 is the next Sunday the 3rd
    assert (s.start, s.explicit) == (date(2026, 5, 3), True)
    [s] = resolve("the quiz is on Friday", THU)
    assert (s.start, s.explicit) == (date(2026, 3, 27), False)


def test_weekdays_read_the_tense_of_their_own_sentence():
    spans = resolve("I was ill on Monday. The plumber comes on Friday.", THU)
    assert [s.start for s in spans] == [date(2026, 3, 23), date(2026, 3, 27)]
    # a plan in the present tense is the coming one; a bare weekday is a date too
    assert span("the vet is on Thursday", THU) == (date(2026, 4, 2),) * 2
    assert span("I can't come to Wednesday's call", THU) == (date(2026, 4, 1),) * 2
    assert resolve("we swim on Sundays", THU) == []  # a habit, not a date
    # a lower-case chat names the day in full all the same; "the sun" is no Sunday
    assert span("vet appt thursday at noon", MON) == (date(2023, 5, 11),) * 2
    assert resolve("lovely sun and a sat nav", THU) == []


def test_a_date_without_year_in_a_plan_is_the_coming_one():
    # 193 days ahead against 172 days back: a plan, not last summer
    assert (
        span("the reunion is 5 October in Leeds", datetime(2026, 3, 26, tzinfo=UTC))
        == (date(2026, 10, 5),) * 2
    )
    assert span("I visited my parents in December.", MON) == (date(2022, 12, 1), date(2022, 12, 31))


def test_that_weekend_is_the_weekend_of_the_date_said_before():
    spans = resolve("The fair is 15-16 August. Trains are full that weekend.", THU)
    assert [(s.start, s.end) for s in spans] == [(date(2026, 8, 15), date(2026, 8, 16))] * 2
    assert resolve("Trains are full that weekend.", THU) == []  # nothing to anchor to
    assert resolve("The reading weekend was great.", THU) == []  # a kind of weekend, not a date
