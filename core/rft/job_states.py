"""The RFT job states, in one place: which end a job, which wait on the person, which can be resumed.

The control plane spells states `JOB_STATE_RUNNING`; svgagent shows and stores the short form (`RUNNING`). Every
check here takes either form. Importing this module is free (no client library), so the Jobs pane, the CLI, the
monitor and the simulator all read the same sets.
"""

from __future__ import annotations

PREFIX = "JOB_STATE_"
# Every state of `fireworks.types.ReinforcementFineTuningJob.state` (short form).
STATES = (
    "UNSPECIFIED",
    "CREATING",
    "PENDING",
    "VALIDATING",
    "RUNNING",
    "WRITING_RESULTS",
    "COMPLETED",
    "FAILED",
    "CANCELLING",
    "CANCELLED",
    "EARLY_STOPPED",
    "PAUSED",
    "RE_QUEUEING",
    "CREATING_INPUT_DATASET",
    "IDLE",
    "EXPIRED",
    "DELETING",
    "DELETING_CLEANING_UP",
)
# The job is over: it will not change state again by itself.
TERMINAL = frozenset({"COMPLETED", "FAILED", "CANCELLED", "EARLY_STOPPED", "EXPIRED"})
# Not over, but it will not move until someone acts (resume): a watcher stops and says so.
WAITING_ON_USER = frozenset({"PAUSED"})
RESUMABLE = frozenset({"CANCELLED", "FAILED", "PAUSED"})
EVALUABLE = frozenset({"COMPLETED", "EARLY_STOPPED"})  # the job left an output model to evaluate
COMPLETED_OK = EVALUABLE  # what `rft status --watch` reports with exit status 0


def short_state(state: str | None) -> str:
    """`JOB_STATE_RUNNING` → `RUNNING` (None or "" → `UNSPECIFIED`)."""
    return (state or PREFIX + "UNSPECIFIED").removeprefix(PREFIX)


def wire_state(state: str) -> str:
    """`RUNNING` → `JOB_STATE_RUNNING` (the long form is returned as is)."""
    return state if state.startswith(PREFIX) else PREFIX + state


def is_terminal(state: str | None) -> bool:
    """True for COMPLETED, FAILED, CANCELLED, EARLY_STOPPED and EXPIRED (short or long form)."""
    return short_state(state) in TERMINAL


def stops_watching(state: str | None) -> bool:
    """True when polling cannot show anything new until someone acts: a terminal or a paused job."""
    short = short_state(state)
    return short in TERMINAL or short in WAITING_ON_USER


def why_stopped(state: str | None, job: str = "the job") -> str:
    """What a watcher says when it stops on `state` ("" for a terminal state: the state says it all)."""
    if short_state(state) in WAITING_ON_USER:
        return (
            f"{job} is {short_state(state)}: it will not continue by itself; `svgagent rft resume {job}` (or r in "
            "the Jobs pane) continues it"
        )
    return ""
