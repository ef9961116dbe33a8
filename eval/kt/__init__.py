"""KT evaluation (paper 003): natural data, program checking, metrics, baselines, reports."""
