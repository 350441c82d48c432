"""Exit statuses of the `svgagent` command, in one place (the README and `--help` texts quote them)."""

import signal

EXIT_OK = 0  # done; for `eval`, the mean score reached the threshold
EXIT_BELOW = 1  # `eval`: the mean score is below the threshold
EXIT_USAGE = 2  # a usage, configuration or data error (one line on stderr says which)
EXIT_INCOMPLETE = 3  # `eval`: the mean reached the threshold, but some rollouts failed without a valid score
EXIT_BUDGET = 4  # `eval --budget`: the run stopped before a call that would pass the budget (resumable)
EXIT_INTERRUPTED = 130  # Ctrl-C (SIGINT): everything finished so far is saved; the message names the resume command
EXIT_TERMINATED = 143  # SIGTERM (128 + 15): handled like Ctrl-C


class Stopped(Exception):
    """A command was stopped by SIGINT or SIGTERM after its work was cancelled cleanly (tui/cli/interrupts.py)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return EXIT_TERMINATED if self.signum == signal.SIGTERM else EXIT_INTERRUPTED
