"""Expression trees for the NL round-trip study (paper 002): skeletons, domains, serializers, features, suites."""
