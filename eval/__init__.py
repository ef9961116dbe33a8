"""Scoring: KT CompressionRate / Accuracy / Precision with Gzip, LMiC, Repeat and Upper Bound baselines; RTCE EM / ES /
Pass@k; NL round-trip metrics. Filled in by the evaluation issues; nothing here yet.
"""
