"""What screens and widgets may use of the app: the typed seam between them and `SvgAgentApp`.

Screens sit below the app in the layers (import-linter), so they cannot import it; they type ``self.app`` as this
Protocol instead. Tests can hand a screen any object with these attributes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from svgagent.core.config.settings import Settings
    from svgagent.core.rft.job_source import JobSource
    from svgagent.core.run.events import EventBus
    from svgagent.core.scoring.models import RolloutUpdate
    from svgagent.core.store.run_store import Store
    from svgagent.tui.message_log import MessageLog
    from svgagent.tui.run_control import RunControl


class AppServices(Protocol):
    settings: Settings  # what the next run uses (the Config pane updates it)
    store: Store
    demo: bool  # the endpoints are the simulators
    initial_run_id: str | None
    env_file: Path  # where the Secrets pane keeps keys
    clock: Callable[[], float]  # monotonic seconds: elapsed times, ETA
    wall_clock: Callable[[], float]  # seconds since the epoch: RFT job ages
    bus: EventBus[RolloutUpdate]
    control: RunControl
    job_source: JobSource | None
    job_poll_s: float | None
    keymap: Mapping[str, str]  # binding id → keys, as the [keymap] table remaps them
    message_log: MessageLog  # every notification of the session

    def settings_for_run(self, stored: Mapping[str, Any]) -> Settings: ...

    def after_first_frame(self, callback: Callable[[], object]) -> None: ...  # once that frame is on the terminal

    def input_on_its_way(self) -> bool: ...  # a key or paste is handled, or its frame is not composed yet

    def open_compare(self, run_a: str, run_b: str) -> bool: ...
