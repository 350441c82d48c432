"""Runs in and out in Eval Protocol's formats: EvaluationRow JSONL and CSV export, JSONL import (a file, a row, our own
extra block), Eval Protocol's status codes.

May import: ``run``, ``config``, ``store``, the shared top-level modules and ``scoring``."""
