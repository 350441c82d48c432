"""A run, from dataset to scores: the dataset and prompt, creating a run, the async engine (its process, workers and
rollout pool), the policy call, the events it publishes and following a live run from the store.

May import: ``config``, ``store``, the shared top-level modules and ``scoring``."""
