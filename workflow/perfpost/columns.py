"""Column names of perfpost's tables, shared by the tables and the config check that keeps
axis names from colliding with them (kept apart from tidy, which imports pandas)."""

FIXED_COLUMNS = ("experiment", "cell", "host", "repeat")
TAIL_COLUMNS = ("tool", "metric", "value", "unit", "status", "attempt")
SUMMARY_COLUMNS = ("n", "median", "mean", "min", "max", "std", "cv")
