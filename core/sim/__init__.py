"""svgagent.core.sim: loopback simulators (policy + judge, Fireworks control plane) for `--demo` and the tests.
Production code reaches them only through the demo wiring in `svgagent.core.demo`.

May import: ``rft`` (the job states it plays), the shared top-level modules and ``scoring``.
"""
