"""Who demo mode is on the simulated control plane: its fake keys, account and seeded job.

Its own module (no imports) so that demo mode can name them without importing the launch steps, which import the
fireworks-ai client (≈0.5 s of CPU): the Jobs pane's demo source is made on the app's event loop when the pane is
first shown, and that import froze the first seconds of `svgagent tui --demo`.
"""

DEMO_FIREWORKS_KEY = "simulated-fireworks-key"
DEMO_OPENAI_KEY = "simulated-openai-key"
DEMO_ACCOUNT = "simulated-account"
DEMO_JOB_ID = "svgagent-demo-job"
