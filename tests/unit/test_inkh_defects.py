"""Issue 11 defects 2-6 on sentences written for these tests (not the generator's templates,
not the lexicon's phrase lists): trust, negation and endings, corrections, attribution, and
what a request needs. Each test runs the real reader -> upsert -> passive injection chain on
an in-memory graph."""

from datetime import UTC, datetime, timedelta

from speakerflow.graphs.facts import FactGraph
from speakerflow.ops.inject import InjectConfig, PassiveInjector
from speakerflow.ops.knowledge.canonicalize import Canonicalizer
from speakerflow.ops.knowledge.detect import Detector
from speakerflow.ops.knowledge.extract_knowledge import Event, KnowledgeExtractor
from speakerflow.ops.knowledge.invalidate import upsert_facts
from speakerflow.ops.text.people import PersonResolver

T0 = datetime(2026, 4, 6, 8, 0, tzinfo=UTC)
ROSTER = [
    "priya",
    "omar",
    "lena",
    "carl",
    "dana",
    "ana",
]  # speaker names; text matches case-insensitively


class Desk:
    """A trading desk's stream fed event by event through extraction and upsert."""

    def __init__(self):
        self.canon = Canonicalizer(group_id="desk")
        self.det = Detector(
            self.canon.lexicon, self.canon.alias_table, people=PersonResolver(ROSTER)
        )
        self.x = KnowledgeExtractor(self.canon, self.det)
        self.fg = FactGraph(None, "desk")
        self.t = T0
        self.n = 0

    def say(self, speaker, text, stype="user_turn", tier=1, minutes=30, to=None):
        self.n += 1
        self.t += timedelta(minutes=minutes)
        ev = Event(f"d{self.n:03d}", text, speaker, self.t, stype, tier, addressee=to)
        cands = self.x.extract(ev)
        upsert_facts(self.fg, cands, self.t)
        return ev.msg_id

    def facts(self, subject, relation):
        return [
            k for k in self.fg.items.values() if k.subject_id == subject and k.relation == relation
        ]

    def current(self, subject, relation):
        return sorted(k.value for k in self.facts(subject, relation) if k.invalid_at is None)

    def inject(self, text, user=None, minutes=5):
        inj = PassiveInjector(self.fg, self.canon, self.det, config=InjectConfig(record_use=False))
        return inj.inject(text, self.t + timedelta(minutes=minutes), user)


def knowledge(wc):
    return [ln.text for ln in wc.lines if ln.kind == "knowledge"]


# -- 2. trust -----------------------------------------------------------------------------------
def test_rumour_never_becomes_current_over_first_hand_nor_sets_market_state():
    d = Desk()
    d.say("desk_feed", "Desk feed: ETH has spent the whole week in a downtrend.", "market_update")
    d.say(
        "forum_scraper",
        "Unverified chatter says ETH is about to go bullish.",
        "tool_observation",
        tier=3,
    )
    # what decay's regime term and the header read
    assert d.fg.regime("asset:ETH", relation="regime") == "bearish"
    wc = d.inject("Market read on ETH please, what's the trend?", user="ana")
    head = wc.lines[0].text
    assert "ETH bearish" in head and "bullish" not in head
    assert not any("bullish" in t for t in knowledge(wc))
    assert any("regime: bearish" in t for t in knowledge(wc))


def test_first_hand_confirmation_of_a_rumour_is_a_new_first_hand_fact():
    d = Desk()
    d.say("platform", "Copy platform: @gridqueen is live for followers.", "risk_signal")
    d.say(
        "forum_scraper",
        "Someone on the forum claims @gridqueen got halted.",
        "tool_observation",
        tier=3,
    )
    assert d.current("trader:gridqueen", "status") == ["active", "paused"] or d.current(
        "trader:gridqueen", "status"
    ) == ["active"]
    conf = d.say(
        "platform", "Copy platform notice: @gridqueen copying is now halted.", "risk_signal"
    )
    cur = [k for k in d.facts("trader:gridqueen", "status") if k.invalid_at is None]
    assert [(k.value, k.trust_tier, k.evidence_ids, k.valid_at) for k in cur] == [
        ("paused", 1, [conf], d.t)
    ]
    old = [k for k in d.facts("trader:gridqueen", "status") if k.value == "active"]
    assert old and all(k.invalid_at == d.t for k in old)
    wc = d.inject("@gridqueen status?")
    assert [t for t in knowledge(wc) if "status" in t] and all(
        "active" not in t for t in knowledge(wc)
    )


# -- 3. negation and endings --------------------------------------------------------------------
def test_endings_close_the_slot_without_a_new_value():
    d = Desk()
    d.say("risk_desk", "ETH is exposed to depeg risk through the staked collateral.", "risk_signal")
    d.say("risk_desk", "AVAX fills are vulnerable to slippage this week.", "risk_signal")
    d.say(
        "risk_desk", "SOL looks vulnerable to an exchange outage at the main venue.", "risk_signal"
    )
    d.say("copy_bot", "@basis_betty trades a basis trade on BTC.", "tool_observation")
    assert d.current("asset:ETH", "exposed_to") == ["risk:depeg"]
    d.say("carl", "Good news, the depeg scare on ETH is behind us.")
    d.say("dana", "We dropped the AVAX slippage concern after the new router.")
    d.say("risk_desk", "SOL is vulnerable to an exchange outage, still.", "risk_signal")
    d.say("carl", "Venue is back to normal; that exposure is gone.")
    d.say("carl", "@basis_betty posted her monthly recap.")
    d.say("carl", "She stopped running the basis trade last Friday.")
    assert d.current("asset:ETH", "exposed_to") == []
    assert d.current("asset:AVAX", "exposed_to") == []
    assert d.current("asset:SOL", "exposed_to") == []
    assert d.current("trader:basisbetty", "uses_strategy") == []
    assert (
        d.current("trader:basisbetty", "status") == []
    )  # "stopped" ended a strategy, not the trader
    ended = [k for k in d.facts("asset:ETH", "exposed_to")]
    assert ended and all(k.invalid_at is not None for k in ended)


def test_a_not_elsewhere_in_the_clause_does_not_block_the_value():
    d = Desk()
    d.say("lena", "I'm not chasing pumps anymore, balanced on risk these days.")
    assert d.current("person:lena", "risk_preference") == ["moderate"]
    d.say("omar", "Honestly I'm balanced on risk, unlike Priya.")
    assert d.current("person:omar", "risk_preference") == ["moderate"]
    assert d.current("person:priya", "risk_preference") == []
    d.say("venue_bot", "LINK order book is not deep anymore.", "tool_observation")
    assert "deep" not in d.current("asset:LINK", "liquidity")


# -- 4. corrections -----------------------------------------------------------------------------
def test_correction_replaces_the_value_just_stated_by_the_same_source():
    d = Desk()
    d.say("exchange_api", "BTC taker fee is 0.1%.", "tool_observation")
    d.say("dana", "FYI the ETH taker fee is 0.4% on the new tier.")
    wrong = d.say("carl", "Heads up, BTC trading fee moved to 0.4% this morning.")
    fix = d.say("carl", "typo above, it's 0.04% not 0.4%")
    assert d.current("asset:BTC", "fee") == ["0.04%"]
    assert d.current("asset:ETH", "fee") == ["0.4%"]  # another source's value is untouched
    bad = [k for k in d.facts("asset:BTC", "fee") if k.value == "0.4%"]
    assert [k.evidence_ids for k in bad] == [[wrong]]
    assert bad[0].invalid_at == bad[0].valid_at  # retracted: never valid
    good = [k for k in d.facts("asset:BTC", "fee") if k.value == "0.04%"]
    assert good[0].evidence_ids == [fix]
    wc = d.inject("Going long BTC now, what are the fees?", user="carl")
    assert not any("0.4%" in t for t in knowledge(wc)) and any("0.04%" in t for t in knowledge(wc))


def test_correction_in_other_words():
    d = Desk()
    d.say("omar", "Keep my position cap at 5%.")
    d.say("omar", "my bad, fat-fingered that: 2%, not 5%")
    assert d.current("person:omar", "max_position") == ["2%"]


# -- 5. attribution -----------------------------------------------------------------------------
def test_private_facts_said_by_someone_else_go_to_the_person_they_are_about():
    d = Desk()
    d.say("carl", "I'm lowering your size limit to 3%.", to="Priya")
    d.say("carl", "@omar your cap is still 6%")
    d.say("carl", "Lena, you're on defensive settings until the audit.")
    assert d.current("person:priya", "max_position") == ["3%"]
    assert d.current("person:omar", "max_position") == ["6%"]
    assert d.current("person:lena", "risk_preference") == ["conservative"]
    assert (
        d.current("person:carl", "max_position") == []
        and d.current("person:carl", "risk_preference") == []
    )
    scopes = {k.scope for k in d.fg.items.values() if k.subject_id == "person:priya"}
    assert scopes == {"user:priya"}


def test_a_threshold_is_not_a_trader_statistic():
    d = Desk()
    d.say("copy_bot", "@gridqueen peak-to-trough loss so far: 14%.", "tool_observation")
    d.say("risk_desk", "Reminder: alerts fire past a 25% drawdown on @gridqueen.", "risk_signal")
    d.say(
        "risk_desk",
        "Copying stops automatically if @gridqueen breaches a 30% drawdown.",
        "risk_signal",
    )
    assert "25%" not in d.current("trader:gridqueen", "max_drawdown")
    assert "30%" not in d.current("trader:gridqueen", "max_drawdown")


# -- 6. what a request needs --------------------------------------------------------------------
def test_trade_and_copy_requests_carry_the_askers_own_constraints():
    d = Desk()
    d.say("ana", "Keep each of my positions below 2% of the account.")
    d.say("ana", "I'm a cautious trader, always have been.")
    d.say("copy_bot", "@gridqueen closes 61% of trades green.", "tool_observation")
    for request in ("Buy 0.5 ETH at market for me.", "Should I mirror @gridqueen?"):
        lines = knowledge(d.inject(request, user="ana"))
        assert any("max position: 2%" in t for t in lines), (request, lines)
        assert any("risk preference: conservative" in t for t in lines), (request, lines)


def test_a_request_that_only_names_an_entity_gets_its_current_facts():
    d = Desk()
    d.say("copy_bot", "@gridqueen closes 61% of trades green.", "tool_observation")
    d.say("copy_bot", "@gridqueen deepest drawdown 12%.", "tool_observation")
    d.say("copy_bot", "Copying @trend_owl is halted while they rework the bot.", "tool_observation")
    d.say("copy_bot", "@trend_owl is live again for copiers.", "tool_observation")
    lines = knowledge(d.inject("@gridqueen stats?"))
    assert any("61%" in t for t in lines) and any("12%" in t for t in lines), lines
    lines = knowledge(d.inject("is trend_owl copyable again?"))
    assert any("status: active" in t for t in lines) and not any("paused" in t for t in lines), (
        lines
    )
