"""Exit statuses of the `svgagent` command, in one place (the README and `--help` texts quote them)."""

EXIT_OK = 0  # done; for `eval`, the mean score reached the threshold
EXIT_BELOW = 1  # `eval`: the mean score is below the threshold
EXIT_USAGE = 2  # a usage, configuration or data error (one line on stderr says which)
EXIT_INTERRUPTED = 130  # Ctrl-C (SIGINT): everything finished so far is saved; the message names the resume command
EXIT_TERMINATED = 143  # SIGTERM (128 + 15): handled like Ctrl-C
