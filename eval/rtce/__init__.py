"""RTCE evaluation (papers 000/001)."""
