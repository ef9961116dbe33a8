"""NL round-trip evaluation (paper 002): leakage guard, symbolic oracle, lexicon features."""
