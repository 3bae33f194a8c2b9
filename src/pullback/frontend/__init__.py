"""The front end: parse a function's source, desugar it, lift its closures,
structure its early exits."""
