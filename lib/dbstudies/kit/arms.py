"""The arms a study compares: `Arm` (a configuration: label, settings, intent, flavour; a twin:
the A/A control or the paused positive control), made from named configurations
(`config_arms`) or by a study's `arms` hook, with the controls its parameters ask for
(`with_control`, `arms_of`). A study reaches them through its kit (`studykit as S`: `S.Arm`,
`S.config_arms` …).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .. import servers
from ..observe import pauses

AA_SUFFIX = " (A/A)"


@dataclass(frozen=True)
class Arm:
    """One configuration compared in a study: a label, what its server starts want — an
    `intent` (said in each flavour's dialect) and/or plain my.cnf `settings` —, and its
    flavour (None: the study's). `twin_of` marks a copy of an arm: the A/A twin, or with a
    `pause` the positive control (its server paused during each measured step)."""
    label: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    flavour: str | None = None
    twin_of: str | None = None
    intent: servers.Intent | None = None
    pause: pauses.Pause | None = None

    @property
    def aa(self) -> bool:
        """Whether this is the A/A twin (a copy, not paused)."""
        return self.twin_of is not None and self.pause is None


INTENTS = tuple(f.name for f in dataclasses.fields(servers.Intent))


def split_config(config: Mapping[str, Any]) -> tuple[servers.Intent, dict[str, Any]]:
    """A named configuration's intent (keys naming `servers.Intent` fields) and its plain
    server variables (every other key; `flavour` excluded)."""
    intent = {k: v for k, v in config.items() if k in INTENTS}
    plain = {k: v for k, v in config.items() if k not in INTENTS and k != "flavour"}
    return servers.Intent(**intent), plain


def config_arms(configs: Mapping[str, Mapping[str, Any]], flavour: str) -> list[Arm]:
    """One arm per named configuration, in the order given (the first is the baseline); a
    configuration's `flavour` key picks its server (default: `flavour`)."""
    out = []
    for name, config in configs.items():
        intent, plain = split_config(config)
        out.append(Arm(name, plain, flavour=config.get("flavour") or flavour, intent=intent))
    return out


def config_servers(configs: Any, flavour: str) -> list[str]:
    """The flavours named configurations start (each its own `flavour`, else `flavour`);
    just `flavour` while the configurations are malformed (their check reports it)."""
    if isinstance(configs, dict) and all(isinstance(v, dict) for v in configs.values()):
        return list(dict.fromkeys(c.get("flavour") or flavour for c in configs.values()))
    return [flavour]


def with_control(arms: list[Arm], p: Any) -> list[Arm]:
    """The arms to measure: the study's, plus (`p.aa_control`) a twin of the baseline and
    (`p.positive_control`) a twin whose server is paused (`pauses`), each after the baseline."""
    base = arms[0]
    twins = []
    if p.aa_control:
        twins.append(dataclasses.replace(base, label=base.label + AA_SUFFIX, twin_of=base.label))
    pause = pauses.parse(getattr(p, "positive_control", None))
    if pause is not None:
        twins.append(dataclasses.replace(base, label=base.label + pauses.SUFFIX, twin_of=base.label,
                                         pause=pause))
    return [base, *twins, *arms[1:]]


def flavour_label(flavour: str) -> str:
    """How an arm names a flavour: by its name; a flavour file given by its path (a server
    of the user's own kept outside env/servers) by the file's name without .toml.

    >>> flavour_label("mariadb-10.11"), flavour_label("/home/me/servers/patched.toml")
    ('mariadb-10.11', 'patched')
    """
    return Path(flavour).stem if str(flavour).endswith(".toml") else flavour


def arms_of(study: Any, p: Any) -> list[Arm]:
    """The arms measured: the study's, with its controls (`with_control`)."""
    return with_control(study.arms(p), p)
