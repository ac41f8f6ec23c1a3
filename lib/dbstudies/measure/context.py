"""What one step is, for the hooks of a study's loop: the `Context` a hook gets — the parameters,
the run, the arm's server and client, the round, the study's notes across blocks.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .. import servers
from ..kit.studykit import Arm
from ..store.results import Run
from ..workloads.sysbench import Sysbench


@dataclass
class Context:
    """What a hook sees: the parameters, the run, the arm's server and sysbench client."""
    params: Any
    run: Run
    server: servers.Server
    sysbench: Sysbench | None
    arm: "Arm | None" = None
    repeat: int = 0
    warmups: list[int] = field(default_factory=lambda: [0])  # the run's counter: warm-ups are steps -1, -2, …
    progress: Callable[[str], None] = lambda text: None     # where a long step says how far it is
    cells: list[dict[str, Any]] = field(default_factory=list)  # the block's cells, in their order
    memo: dict[str, Any] = field(default_factory=dict)      # the study's own notes across blocks
    session: dict[str, Any] = field(default_factory=dict)   # settings the arm's sessions set (shared server)
    siblings: Callable[[], list[int]] = lambda: []           # pids of the run's other servers up now

    def start_settings(self) -> dict[str, Any]:
        """The arm's settings for a (cold) start of its server: none on a shared server,
        where each session sets them (`session`)."""
        return {} if self.session else dict(self.arm.settings if self.arm else {})
