"""kt-train shared runtime: configuration, model loading, generation backends, sandbox, training and the `kt` CLI.

The runtime never imports the data packages (dsl, tracegen, eval); recipes wire them together.
"""

__version__ = "0.1.0"
