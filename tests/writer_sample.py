"""Two messages of a decision, shared by the local Writer's tests (the GRPO prompt and reward
in tests/unit, the real SmolLM2 model in tests/integration)."""

MSGS = (
    {"msg_id": "t_s1_t000", "speaker": "Ana", "text": "We agreed: the offsite is in Porto.",
     "ts": "2026-03-02T09:00:00Z", "session_id": "s1", "turn": 0},
    {"msg_id": "t_s1_t001", "speaker": "Ben", "text": "Great, I love Porto.",
     "ts": "2026-03-02T09:01:00Z", "session_id": "s1", "turn": 1},
)  # fmt: skip
