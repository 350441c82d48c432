"""The SQLite run store: the Store, its batched writer thread, migrations, typed rows and the run summary, the filter
language, leases, size caps, what verdicts and values become in columns, run references, a person's review marks.

May import: only the shared top-level modules and ``scoring``."""
