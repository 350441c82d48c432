"""Reading a run's scores: distributions and summary statistics, and two runs compared row by row.

May import: ``store``, the shared top-level modules and ``scoring``."""
