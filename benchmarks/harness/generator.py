"""Stage A world and event stream: natural-language events with a private ground truth.

Per seed: assets (named by random aliases: Bitcoin / XBT / BTCUSDT / typos), copy traders
(``@alpha_whale`` / ``AlphaWhale`` / ``alpha whale``), two users, and latent slot values
(fee, regime, liquidity, win rate, drawdown, status, risk preference, position cap). Four
rounds of episodes in four task families: round 1 cold start, round 2 preference signals,
round 3 regime / protocol shocks (announced once, in paraphrase), round 4 post-shock reuse.
Noise: chatter, hedged rumours (trust tier 3) and alias typos.

The systems under test only ever see :attr:`Episode.events` (System 1 rows). The
:class:`Truth` (gold requirements, what each event states, value history) stays here and is
read by :mod:`.metrics` alone.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

FAMILIES = ("market_analysis", "portfolio_review", "copy_trading_evaluation", "trade_preparation")
ASSETS = {
    "BTC": ["BTC", "Bitcoin", "XBT", "BTCUSDT", "BTC-USD"],
    "ETH": ["ETH", "Ether", "Ethereum", "ETHUSDT"],
    "SOL": ["SOL", "Solana", "SOLUSDT"],
    "XRP": ["XRP", "Ripple", "XRPUSDT"],
    "DOGE": ["DOGE", "Dogecoin", "DOGEUSDT"],
    "ADA": ["ADA", "Cardano", "ADAUSDT"],
    "AVAX": ["AVAX", "Avalanche", "AVAXUSDT"],
    "LINK": ["LINK", "Chainlink", "LINKUSDT"],
}
TRADERS = ["alpha_whale", "delta_hunter", "quiet_quant", "moon_mira", "basis_bob", "theta_tess"]
WORDS = {
    "bullish": ["bullish", "in an uptrend", "in a bull trend"],
    "bearish": ["bearish", "in a downtrend", "in a bear market"],
    "ranging": ["range-bound", "sideways", "choppy"],
    "volatile": ["volatile", "in high volatility"],
    "deep": ["deep", "thick"],
    "thin": ["thin", "shallow"],
    "active": ["active", "live"],
    "paused": ["paused", "halted"],
    "conservative": ["conservative", "cautious"],
    "moderate": ["moderate", "balanced"],
    "aggressive": ["aggressive", "risk-on"],
}
STATE = {
    "fee": "{a} taker fee is {v}|Fee schedule: {a} trading fee currently {v}|Exchange API reports "
    "commission on {a} at {v}",
    "regime": "Market desk: {a} regime is {w}|{a} market regime looks {w} on the daily|Analysts "
    "call the {a} trend {w}",
    "liquidity": "Order book depth on {a} is {w}|{a} liquidity looks {w} today",
    "win_rate": "Copy stats: {t} win rate {v}|{t} hit rate sits at {v}",
    "max_drawdown": "{t} max drawdown {v}|Risk card: {t} worst drawdown {v}",
    "status": "Copy trading status for {t}: {w}|{t} status {w}",
    "risk_preference": "I'm {w} these days|My risk tolerance is {w} now",
    "max_position": "Keep my position size under {v}|Max position for me is {v} of the book",
}
SHOCK = {
    "fee": "BREAKING: {a} taker fee changed from {o} to {v}|Protocol update: trading fee on {a} "
    "raised to {v}",
    "regime": "Regime shift: {a} flipped from {ow} to {w}|Macro shock, {a} market regime now {w}",
    "liquidity": "Liquidity shock: order book depth on {a} now {w}",
    "status": "Alert: copy trading status for {t} is now {w}",
    "max_drawdown": "Risk alert: {t} max drawdown now {v}",
    "risk_preference": "Actually my risk tolerance changed, I'm {w} now",
}
#: Held-out phrasings (``holdout`` share of statements; ``--holdout 1.0``: all of them): six
#: templates per relation written by a helper session that never read ``ops/`` or this
#: generator, frozen in ``tests/data/inkh_heldout/harness_phrasings.json``. The copy beside this
#: module is what an installed tree reads; ``tests/unit/test_inkh_holdout_phrasings.py`` checks
#: both files against the sha256 of that folder's README.
HOLDOUT_FILE = Path(__file__).with_name("heldout_phrasings.json")


def load_holdout(path: Path = HOLDOUT_FILE) -> dict[str, list[str]]:
    """The held-out templates per relation (placeholders ``{a}``, ``{t}``, ``{v}``, ``{w}``)."""
    return json.loads(path.read_text(encoding="utf-8"))["templates"]


ASK = {
    "fee": ["fees", "trading cost", "commission"],
    "liquidity": ["liquidity", "order book depth"],
    "regime": ["regime", "trend"],
    "win_rate": ["win rate", "hit rate"],
    "max_drawdown": ["drawdown"],
    "status": ["status"],
    "risk_preference": ["risk tolerance"],
    "max_position": ["position size"],
}
GOLD = {
    "market_analysis": ("A:regime", "A:liquidity"),
    "portfolio_review": ("A:regime", "B:regime", "U:max_position"),
    "copy_trading_evaluation": ("T:win_rate", "T:max_drawdown", "T:status", "U:risk_preference"),
    "trade_preparation": ("A:fee", "A:liquidity", "U:risk_preference"),
}
QUESTION = {
    "market_analysis": "Give me a market analysis of {A}: {asks}?|What's the outlook for {A}, "
    "{asks}?",
    "portfolio_review": "Review my portfolio holdings in {A} and {B}, {asks}?|Portfolio review: "
    "{A} and {B} allocation, {asks}?",
    "copy_trading_evaluation": "Should I copy {T}? Check {asks}.|Thinking to follow {T} as a copy "
    "trader, {asks}?",
    "trade_preparation": "Prepare an order to buy {A}: {asks}?|I want to place a long on {A}, "
    "check {asks}.",
}
USER_SLOTS = ("risk_preference", "max_position")


@dataclass
class Episode:
    """One workflow: events the system sees; ``qid`` is the user query event."""

    round: int
    family: str
    user: str
    ts: datetime
    events: list[dict]
    qid: str


@dataclass
class Truth:
    """Generator-private ground truth: gold slots per episode, event statements, value history
    and which events are rumours."""

    gold: dict[str, list[tuple]] = field(default_factory=dict)
    statements: dict[str, list[tuple]] = field(default_factory=dict)
    history: dict[tuple, list[tuple[datetime, str]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    #: ids of the tier-3 rumour events (what they state never held)
    rumours: set[str] = field(default_factory=set)

    def value(self, slot: tuple, at: datetime) -> str | None:
        cur = None
        for t, v in self.history.get(slot, ()):
            if t <= at:
                cur = v
        return cur

    def outdated(self, slot: tuple, value: str, at: datetime) -> bool:
        """True if ``value`` held for ``slot`` before ``at`` but no longer does."""
        hist = [(t, v) for t, v in self.history.get(slot, ()) if t <= at]
        return bool(hist) and hist[-1][1] != value and any(v == value for _, v in hist[:-1])


class Generator:
    """Build one seed's episodes (``stream``) and its :class:`Truth`."""

    def __init__(
        self,
        seed: int,
        rounds: int = 4,
        episodes: int = 80,
        group: str = "bench",
        holdout: float = 0.0,
    ):
        self.rng = random.Random(seed)
        self.holdout = holdout
        self.held_out = load_holdout() if holdout else {}
        self.rounds, self.episodes, self.group = rounds, episodes, group
        self.t = datetime(2026, 1, 5, tzinfo=UTC) + timedelta(days=seed % 7)
        self.n = 0
        self.truth = Truth()
        rng = self.rng
        self.assets = rng.sample(sorted(ASSETS), 5)
        self.traders = rng.sample(TRADERS, 3)
        self.users = ["ana", "ben"]
        self.world: dict[tuple, str] = {}
        for a in self.assets:
            self._set((f"asset:{a}", "fee"), f"{rng.choice([0.04, 0.06, 0.08, 0.1, 0.12])}%")
            self._set(
                (f"asset:{a}", "regime"), rng.choice(["bullish", "bearish", "ranging", "volatile"])
            )
            self._set((f"asset:{a}", "liquidity"), rng.choice(["deep", "thin"]))
        for t in self.traders:
            self._set((f"trader:{t}", "win_rate"), f"{rng.randint(40, 75)}%")
            self._set((f"trader:{t}", "max_drawdown"), f"{rng.randint(8, 35)}%")
            self._set((f"trader:{t}", "status"), "active")
        for u in self.users:
            self._set(
                (f"person:{u}", "risk_preference"),
                rng.choice(["conservative", "moderate", "aggressive"]),
            )
            self._set((f"person:{u}", "max_position"), f"{rng.choice([1, 2, 3, 5])}%")

    def _set(self, slot: tuple, value: str) -> None:
        self.world[slot] = value
        self.truth.history[slot].append((self.t, value))

    # -- surface forms ---------------------------------------------------------------------
    def alias(self, eid: str) -> str:
        kind, key = eid.split(":", 1)
        rng = self.rng
        if kind == "asset":
            name = rng.choice(ASSETS[key])
            if rng.random() < 0.05 and name.istitle() and len(name) > 5:
                i = rng.randrange(2, len(name) - 1)
                name = name[:i] + name[i] + name[i:]  # a typo: doubled letter
            return name
        if kind == "trader":
            camel = "".join(p.title() for p in key.split("_"))
            return rng.choice([f"@{key}", f"@{key}", camel, key.replace("_", " ")])
        return key

    def say(self, slot: tuple, templates: str, old: str | None = None) -> str:
        """``slot``'s current value in one of ``templates`` ("a|b|c"), or, for a ``holdout``
        share, in one of the held-out templates (where ``{w}`` is the category word itself, as
        their authors were told)."""
        eid, rel = slot
        v = self.world[slot]
        if rel in self.held_out and self.rng.random() < self.holdout:
            text, word = self.rng.choice(self.held_out[rel]), v
        else:
            text = self.rng.choice(templates.split("|"))
            word = self.rng.choice(WORDS.get(v, [v]))
        return text.format(
            a=self.alias(eid),
            t=self.alias(eid),
            v=v,
            w=word,
            o=old or "",
            ow=self.rng.choice(WORDS.get(old or "", [old or ""])),
        )

    def event(
        self, text: str, source_type: str, source: str, trust: int, states: list[tuple]
    ) -> dict:
        self.n += 1
        self.t += timedelta(minutes=self.rng.randint(3, 20))
        mid = f"ev{self.n:06d}"
        self.truth.statements[mid] = states
        return {
            "msg_id": mid,
            "group_id": self.group,
            "session_id": "stream",
            "turn": self.n,
            "ts": self.t,
            "speaker": source,
            "text": text,
            "source_type": source_type,
            "trust_tier": trust,
            "source_ref": f"{source_type}:{mid}",
        }

    def state_event(self, slot: tuple, user: str | None = None) -> dict:
        """A first-tier statement of the current value of ``slot``."""
        if slot[0].startswith("person:"):
            return self.event(
                self.say(slot, STATE[slot[1]]) + ".",
                "user_turn",
                slot[0].split(":")[1],
                1,
                [(slot, self.world[slot])],
            )
        return self.event(
            self.say(slot, STATE[slot[1]]) + ".",
            "tool_observation",
            "exchange_api",
            1,
            [(slot, self.world[slot])],
        )

    def shock(self) -> list[dict]:
        """Round-3 shocks: change several slots and announce each once (market or risk event)."""
        rng, out = self.rng, []
        picks = [(f"asset:{a}", "regime") for a in rng.sample(self.assets, 3)]
        picks += [(f"asset:{a}", "fee") for a in rng.sample(self.assets, 2)]
        picks += [
            (f"asset:{rng.choice(self.assets)}", "liquidity"),
            (f"trader:{rng.choice(self.traders)}", "status"),
            (f"trader:{rng.choice(self.traders)}", "max_drawdown"),
            (f"person:{rng.choice(self.users)}", "risk_preference"),
        ]
        for slot in picks:
            old = self.world[slot]
            rel = slot[1]
            if rel == "fee":
                new = f"{round(float(old[:-1]) + rng.choice([0.02, 0.04, 0.06]), 2)}%"
            elif rel == "max_drawdown":
                new = f"{int(old[:-1]) + rng.randint(10, 25)}%"
            elif rel == "status":
                new = "paused" if old == "active" else "active"
            else:
                cats = {
                    "regime": ["bullish", "bearish", "ranging", "volatile"],
                    "liquidity": ["deep", "thin"],
                    "risk_preference": ["conservative", "moderate", "aggressive"],
                }[rel]
                new = rng.choice([c for c in cats if c != old])
            self.t += timedelta(minutes=rng.randint(5, 40))
            self._set(slot, new)
            if slot[0].startswith("person:"):
                out.append(
                    self.event(
                        self.say(slot, SHOCK[rel], old) + ".",
                        "user_turn",
                        slot[0].split(":")[1],
                        1,
                        [(slot, new)],
                    )
                )
            else:
                stype = "risk_signal" if rel in ("status", "max_drawdown") else "market_update"
                out.append(
                    self.event(
                        self.say(slot, SHOCK[rel], old) + ".", stype, "news_feed", 1, [(slot, new)]
                    )
                )
        return out

    def noise(self) -> dict:
        rng = self.rng
        a = f"asset:{rng.choice(self.assets)}"
        if rng.random() < 0.5:
            return self.event(
                rng.choice(
                    [
                        "gm everyone",
                        "lol {a} to the moon",
                        "anyone watching {a} tonight",
                        "coffee first, charts later",
                    ]
                ).format(a=self.alias(a)),
                "user_turn",
                rng.choice(self.users),
                2,
                [],
            )
        fake = f"{rng.choice([0.0, 0.01, 0.02]):g}%"
        ev = self.event(
            f"Heard a rumour the {self.alias(a)} trading fee might drop to {fake}.",
            "tool_observation",
            "forum_scraper",
            3,
            [((a, "fee"), fake)],
        )
        self.truth.rumours.add(ev["msg_id"])
        return ev

    def episode(self, r: int, shocked: list[tuple]) -> Episode:
        rng = self.rng
        fam = rng.choice(FAMILIES)
        user = rng.choice(self.users)
        binds = {"U": f"person:{user}", "T": f"trader:{rng.choice(self.traders)}"}
        a, b = rng.sample(self.assets, 2)
        binds["A"], binds["B"] = f"asset:{a}", f"asset:{b}"
        if (
            shocked and r >= 3 and rng.random() < 0.5
        ):  # stale-knowledge traps: reuse shocked entities
            s = rng.choice(shocked)
            key = "T" if s[0].startswith("trader:") else "A" if s[0].startswith("asset:") else None
            if key and s[0] != binds.get("B"):
                binds[key] = s[0]
        gold = [(binds[k.split(":")[0]], k.split(":")[1]) for k in GOLD[fam]]
        gold = [
            g for g in gold if not (g[0].startswith("person:") and r < 2)
        ]  # preferences appear in round 2
        events = []
        if rng.random() < 0.3:
            events.append(self.noise())
        if r >= 2 and rng.random() < 0.35:  # preference signal from the user
            events.append(self.state_event((f"person:{user}", rng.choice(USER_SLOTS))))
        asks = [rng.choice(ASK[rel]) for _, rel in gold if rng.random() < 0.7]
        q = rng.choice(QUESTION[fam].split("|")).format(
            A=self.alias(binds["A"]),
            B=self.alias(binds["B"]),
            T=self.alias(binds["T"]),
            asks=" and ".join(asks) or "anything I should know",
        )
        query = self.event(q, "user_turn", user, 1, [])
        events.append(query)
        self.truth.gold[query["msg_id"]] = gold
        shown = rng.sample(gold, 1) if gold else []
        extra = [
            (f"asset:{rng.choice(self.assets)}", rng.choice(["fee", "regime", "liquidity"])),
            (
                f"trader:{rng.choice(self.traders)}",
                rng.choice(["win_rate", "max_drawdown", "status"]),
            ),
        ]
        for slot in [*shown, rng.choice(extra)]:
            if not slot[0].startswith("person:"):
                events.append(self.state_event(slot))
        return Episode(r, fam, user, query["ts"], events, query["msg_id"])

    def stream(self):
        """Yield (round, list of episodes-or-shock batches) in time order; shocks are
        Episode(family='shock')."""
        shocked: list[tuple] = []
        for r in range(1, self.rounds + 1):
            batch = []
            for i in range(self.episodes):
                if r == 3 and i in (0, self.episodes // 2):
                    evs = self.shock()
                    shocked += [s for e in evs for s, _ in self.truth.statements[e["msg_id"]]]
                    batch.append(Episode(r, "shock", "", evs[0]["ts"], evs, ""))
                batch.append(self.episode(r, shocked))
            yield r, batch
