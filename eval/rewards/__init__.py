"""GRPO rewards in `kt_train.rewards`' contract, scored with the evaluation code: `kt` (KT compression), `rtce` (RTCE
answer and round trip), `nl` (NL round trip). Registered under the `kt_train.rewards` entry-point group
(pyproject.toml), so `kt_train.rewards.get_reward("kt_compression")` finds them without importing this package.
"""
