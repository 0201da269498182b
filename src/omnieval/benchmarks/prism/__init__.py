"""PRISM-Bench (being assembled: the benchmark object is registered once its parts land)."""
