"""Domain vocabulary of the knowledge harness: reference assets, relation phrases, value kinds.

This is reference data, not tuned rules: a symbol table of well-known crypto assets (the
kind an exchange's instrument list provides), generic strategy and risk vocabulary, and for
every relation type the phrases that express it in text and how its value is read.
Deployments extend it with :func:`Lexicon.extend`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: Canonical ticker -> other names and tickers. Quote suffixes (USDT, -USD, PERP) are
#: stripped generically by :func:`strip_quote`, so BTCUSDT need not be listed.
REFERENCE_ASSETS: dict[str, tuple[str, ...]] = {
    "BTC": ("Bitcoin", "XBT"),
    "ETH": ("Ether", "Ethereum"),
    "SOL": ("Solana",),
    "XRP": ("Ripple",),
    "DOGE": ("Dogecoin",),
    "ADA": ("Cardano",),
    "AVAX": ("Avalanche",),
    "LINK": ("Chainlink",),
    "DOT": ("Polkadot",),
    "LTC": ("Litecoin",),
    "BNB": ("Binance Coin",),
    "MATIC": ("Polygon", "POL"),
}
STRATEGIES: tuple[str, ...] = (
    "grid bot",
    "funding arbitrage",
    "momentum breakout",
    "mean reversion",
    "basis trade",
    "market making",
    "dca",
    "trend following",
    "scalping",
)
RISKS: tuple[str, ...] = (
    "slippage",
    "liquidation",
    "depeg",
    "exchange outage",
    "funding spike",
    "smart contract exploit",
    "counterparty",
    "regulatory",
    "oracle failure",
)
#: Other names of the strategies and risks above (surface -> canonical name).
VOCAB_ALIASES: dict[str, str] = {
    "funding arb": "funding arbitrage",
    "funding-rate arbitrage": "funding arbitrage",
    "basis trading": "basis trade",
    "cash and carry": "basis trade",
    "dollar-cost averaging": "dca",
    "dollar cost averaging": "dca",
    "grid trading": "grid bot",
    "grid bots": "grid bot",
    "breakout": "momentum breakout",
    "breakouts": "momentum breakout",
    "mean-reversion": "mean reversion",
    "trend-following": "trend following",
    "scalps": "scalping",
    "market-making": "market making",
    "liquidations": "liquidation",
    "liquidation cascade": "liquidation",
    "liq": "liquidation",
    "de-peg": "depeg",
    "depegging": "depeg",
    "outage": "exchange outage",
    "exchange downtime": "exchange outage",
    "exploit": "smart contract exploit",
    "hack": "smart contract exploit",
    "contract exploit": "smart contract exploit",
    "funding spikes": "funding spike",
    "counterparty risk": "counterparty",
    "regulation": "regulatory",
    "oracle": "oracle failure",
    "oracle deviation": "oracle failure",
}
QUOTE_SUFFIX = re.compile(r"[-/_ ]?(?:USDT|USDC|USD|BUSD|PERP)$", re.IGNORECASE)


def strip_quote(symbol: str) -> str:
    """``BTCUSDT`` / ``BTC-USD`` / ``BTC/USDT`` -> ``BTC`` (unchanged if no quote suffix)."""
    base = QUOTE_SUFFIX.sub("", symbol.strip())
    return base or symbol


def norm(text: str) -> str:
    """Alias key: lower-case letters and digits only (``@Alpha_Whale`` -> ``alphawhale``)."""
    return re.sub(r"[^a-z0-9]+", "", text.lower())


#: Canonical categorical values and the words that express them.
CATEGORIES: dict[str, dict[str, tuple[str, ...]]] = {
    "regime": {
        "bullish": (
            "bullish",
            "bull trend",
            "uptrend",
            "bull market",
            "trending up",
            "rallying",
            "pumping",
            "mooning",
            "breaking out",
            "higher highs",
        ),
        "bearish": (
            "bearish",
            "bear trend",
            "downtrend",
            "bear market",
            "trending down",
            "bleeding",
            "dumping",
            "tanking",
            "selling off",
            "lower lows",
            "capitulating",
        ),
        "ranging": (
            "ranging",
            "range-bound",
            "range bound",
            "rangebound",
            "sideways",
            "choppy",
            "chopping",
            "chop",
            "consolidating",
        ),
        "volatile": (
            "high volatility",
            "volatile",
            "whipsaw",
            "whipsawing",
            "whipping",
            "wild swings",
            "swinging wildly",
        ),
    },
    "liquidity": {
        "deep": ("deep", "deeper", "thick", "plenty of depth", "healthy"),
        "thin": ("thin", "thinner", "shallow", "illiquid", "dried up"),
    },
    "status": {
        "active": (
            "active",
            "trading normally",
            "live",
            "resumed",
            "back online",
            "reactivated",
            "copyable",
            "reopened",
            "re-enabled",
            "reinstated",
            "switched on",
            "turned on",
            "back on",
        ),
        "paused": (
            "paused",
            "stopped",
            "halted",
            "suspended",
            "inactive",
            "frozen",
            "offline",
            "disabled",
            "switched off",
            "turned off",
            "deactivated",
            "on hold",
        ),
    },
    "risk_preference": {
        "conservative": (
            "conservative",
            "cautious",
            "low-risk",
            "low risk",
            "risk-averse",
            "defensive",
        ),
        "moderate": ("moderate", "balanced", "medium risk"),
        "aggressive": (
            "aggressive",
            "high-risk",
            "high risk",
            "risk-on",
            "degen",
            "yolo",
            "max risk",
        ),
    },
}


@dataclass(frozen=True)
class Relation:
    """A relation type: which entity type it describes, its phrases, and its value kind.

    ``value`` is ``"percent"`` (a number with %), ``"category"`` (one of
    :data:`CATEGORIES`\\[name]) or an entity type (the object is an entity: ``"risk"``).
    ``owner_scoped`` relations describe a person and are private to that person.
    """

    name: str
    subject: str
    phrases: tuple[str, ...]
    value: str
    owner_scoped: bool = False
    half_life_days: float = 30.0
    #: the category words alone name the relation ("Solana turned bearish" is a regime fact)
    value_cues: bool = False
    #: what the relation means, in plain words: the prototype the reader's nearest-prototype
    #: classifier compares a clause with (no statement template, no benchmark wording)
    description: tuple[str, ...] = ()
    #: semantic kind: market_state, execution_cost, risk, track_record or owner_constraint
    #: (:data:`INTENT_NEEDS` maps task families to the kinds they need)
    kind: tuple[str, ...] = ()


RELATIONS: tuple[Relation, ...] = (
    Relation(
        "fee",
        "asset",
        ("taker fee", "trading fee", "fees", "fee", "commission", "trading cost"),
        "percent",
        half_life_days=120,
        description=(
            "the percentage the exchange charges on every trade of the coin",
            "how much it costs to trade the coin, per fill, in percent",
        ),
        kind=("execution_cost",),
    ),
    Relation(
        "regime",
        "asset",
        ("regime", "market regime", "trend", "market state"),
        "category",
        half_life_days=10,
        value_cues=True,
        description=(
            "the direction the coin's market is moving: rising, falling, flat or swinging wildly",
        ),
        kind=("market_state",),
    ),
    Relation(
        "liquidity",
        "asset",
        ("liquidity", "order book depth", "book depth", "order book", "book"),
        "category",
        half_life_days=15,
        value_cues=True,
        description=("how much size the coin's order book can absorb: deep or thin markets",),
        kind=("market_state", "execution_cost"),
    ),
    Relation(
        "exposed_to",
        "asset",
        ("exposed to", "exposure to", "at risk of", "vulnerable to"),
        "risk",
        half_life_days=30,
        description=("a danger that threatens holders of the coin",),
        kind=("risk",),
    ),
    Relation(
        "win_rate",
        "trader",
        ("win rate", "hit rate", "success rate", "winrate", "wr", "win %", "win pct"),
        "percent",
        half_life_days=30,
        description=(
            "the share of the trader's trades that end in profit",
            "how often the trader's positions close as winners, in percent",
            "the fraction of the trader's trades that hit their target and close in profit",
        ),
        kind=("track_record",),
    ),
    Relation(
        "max_drawdown",
        "trader",
        ("max drawdown", "maximum drawdown", "worst drawdown", "drawdown", "mdd", "max dd", "dd"),
        "percent",
        half_life_days=30,
        description=(
            "the largest fall of the trader's account from its peak, in percent",
            "how much the trader lost at worst before recovering",
        ),
        kind=("track_record",),
    ),
    Relation(
        "status",
        "trader",
        ("status", "copy trading", "copying"),
        "category",
        half_life_days=20,
        value_cues=True,
        description=("whether followers can currently copy the trader or copying is suspended",),
        kind=("track_record",),
    ),
    Relation(
        "uses_strategy",
        "trader",
        ("runs", "uses", "strategy"),
        "strategy",
        half_life_days=60,
        description=("the trading method the trader follows",),
        kind=("track_record",),
    ),
    Relation(
        "risk_preference",
        "person",
        ("risk tolerance", "risk appetite", "risk profile", "risk settings"),
        "category",
        True,
        45,
        value_cues=True,
        description=("how much risk the person is willing to take with their money",),
        kind=("owner_constraint",),
    ),
    Relation(
        "max_position",
        "person",
        (
            "position size",
            "position cap",
            "max position",
            "size cap",
            "cap",
            "size limit",
            "position limit",
            "max size",
        ),
        "percent",
        True,
        60,
        description=(
            "the largest share of the person's account allowed in one position",
            "the size limit on each of the person's trades, in percent of capital",
        ),
        kind=("owner_constraint",),
    ),
)
RELATION_BY_NAME: dict[str, Relation] = {r.name: r for r in RELATIONS}


#: Task families (request intents), described in plain words: the prototypes a request is
#: compared with when no cue word decides its intent.
INTENT_DESCRIPTIONS: dict[str, tuple[str, ...]] = {
    "market_analysis": (
        "asking how the market for a coin is doing and where it is heading",
        "what is the read on this coin, how is it looking",
        "is the coin's market liquid, trending or risky right now",
    ),
    "portfolio_review": (
        "asking to look over the holdings and allocation of one's account",
        "how is my book doing, am I too exposed, what are my limits",
    ),
    "copy_trading_evaluation": (
        "asking whether to follow and automatically copy another trader",
        "what are this trader's numbers, is the trader any good, can I copy them",
    ),
    "trade_preparation": (
        "asking to open, size or execute a buy or sell order",
        "put on a position in the coin, buy it, load up, go long or short with leverage",
    ),
}
#: Short requests of each task family (and of none: ``other``), written for the classifier as
#: exemplars, entities already masked to their type ("the coin", "the trader"): a request no
#: cue word decides is read by its nearest exemplars (k-NN), not by one averaged description.
#: Written by hand for the reader; no line of the paraphrase set or of the benchmark generator.
INTENT_EXAMPLES: dict[str, tuple[str, ...]] = {
    "market_analysis": (
        "what's happening with the coin",
        "how does the coin look right now",
        "is the coin going up or down",
        "the coin's outlook",
        "any risks around the coin",
        "how liquid is the coin's market",
        "what fee does the coin charge",
        "your take on the coin",
        "quick summary of the coin market",
        "where is the coin heading",
        "is the coin still trending",
        "anything bad going on with the coin",
        "how is the coin's order book",
        "overview of the coin",
        "brief me on the coin",
        "what's the situation with the coin",
        "update on the coin please",
    ),
    "portfolio_review": (
        "how is my portfolio doing",
        "go over my positions",
        "am i taking too much risk",
        "how exposed am i right now",
        "what are my limits",
        "am i too heavy in the coin",
        "check my allocation",
        "what risk setting am i on",
        "how much room do i have under my limit",
        "is my account set up ok for this market",
        "is my position in the coin too big",
        "how am i doing overall",
    ),
    "copy_trading_evaluation": (
        "should i copy the trader",
        "is the trader worth following",
        "how good is the trader's track record",
        "show me the trader's performance",
        "can i still copy the trader or is the trader paused",
        "put money into copying the trader",
        "stop following the trader",
        "which strategy does the trader use",
        "is the trader too risky to follow",
        "the trader or the trader, who is better",
        "how has the trader been doing lately",
        "the trader's results",
    ),
    "trade_preparation": (
        "buy some of the coin for me",
        "get me into the coin here",
        "add to my coin position",
        "sell the coin",
        "close my position in the coin",
        "go long the coin with leverage",
        "short the coin",
        "how much of the coin can i buy",
        "is this a good entry for the coin",
        "enter the coin at this price",
        "swap the coin into the coin",
        "cut my loss on the coin",
        "accumulate the coin on weakness",
        "get out of the coin",
        "i'm thinking of buying the coin",
        "time to get in on the coin?",
    ),
    "other": (
        "thanks",
        "hello",
        "good morning",
        "ok cool",
        "export my trade history",
        "set a reminder for later",
        "who is around today",
        "haha",
        "never mind",
        "sounds good",
        "can you help me",
        "send me the file",
        "lol",
        "nice one",
        "be right back",
    ),
}
#: Which entity types a request must name for each task family (a copy decision names a
#: trader; a market read or a trade names an asset; a portfolio review may name either).
INTENT_SUBJECTS: dict[str, tuple[str, ...]] = {
    "market_analysis": ("asset",),
    "portfolio_review": ("asset", "trader", "person"),
    "copy_trading_evaluation": ("trader",),
    "trade_preparation": ("asset",),
}
#: What each task family needs, as relation *kinds* (derived from what the task is, not from
#: any benchmark's gold list): analysing a market needs its state and risks; reviewing a
#: portfolio needs the state and risks of the holdings and the owner's constraints; judging a
#: trader to copy needs the track record and the owner's constraints; preparing a trade needs
#: the cost of execution, the market state and the owner's constraints.
INTENT_NEEDS: dict[str, tuple[str, ...]] = {
    "market_analysis": ("market_state", "risk"),
    "portfolio_review": ("market_state", "risk", "owner_constraint"),
    "copy_trading_evaluation": ("track_record", "owner_constraint"),
    "trade_preparation": ("execution_cost", "market_state", "owner_constraint"),
    "other": (),
}


def intent_profile(relations: tuple[Relation, ...] = RELATIONS) -> dict[str, tuple[str, ...]]:
    """Relations per task family: those whose kind the family needs (:data:`INTENT_NEEDS`)."""
    return {
        intent: tuple(r.name for r in relations if set(r.kind) & set(kinds))
        for intent, kinds in INTENT_NEEDS.items()
    }


@dataclass
class Lexicon:
    """The vocabulary in force; ``extend`` adds strategies, risks or reference assets."""

    assets: dict[str, tuple[str, ...]] = field(default_factory=lambda: dict(REFERENCE_ASSETS))
    strategies: tuple[str, ...] = STRATEGIES
    risks: tuple[str, ...] = RISKS
    relations: tuple[Relation, ...] = RELATIONS

    def extend(
        self,
        *,
        assets: dict[str, tuple[str, ...]] | None = None,
        strategies: tuple[str, ...] = (),
        risks: tuple[str, ...] = (),
    ) -> Lexicon:
        """A new lexicon with the extra entries added."""
        return Lexicon(
            {**self.assets, **(assets or {})},
            self.strategies + strategies,
            self.risks + risks,
            self.relations,
        )


def category_of(relation: str, text: str) -> str | None:
    """The canonical category of ``relation`` expressed in ``text`` (first phrase found), else
    None."""
    best: tuple[int, str] | None = None
    low = text.lower()
    for value, words in CATEGORIES.get(relation, {}).items():
        for w in words:
            m = re.search(r"\b" + re.escape(w) + r"\b", low)
            if m and (best is None or m.start() < best[0]):
                best = (m.start(), value)
    return best[1] if best else None
