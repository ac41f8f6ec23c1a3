"""Study parameters: typed, profile-based, validated before any server starts.

A study declares a frozen dataclass of parameters and a dict of profiles (smoke, quick,
full) giving every field's default. `from_profile` merges a profile with overrides (from the
notebook's parameters cell or the CLI's `-p NAME VALUE`), coerces strings such as
"[1,8,64]" or "1,8,64", and reports every bad or unknown name at once.
"""
from __future__ import annotations

import dataclasses
import json
import re
import types
import typing
from typing import Any, Mapping

from ..core.errors import ParamError, did_you_mean

PROFILES = ("smoke", "quick", "full")


_BARE_LIST = re.compile(r"^\s*\[\s*[\w.@:/+-]+(\s*,\s*[\w.@:/+-]+)*\s*\]\s*$")


def parse_value(text: str) -> Any:
    """What a CLI value means: JSON/YAML-ish literals, else the plain string. Text that
    opens a JSON list or object must be valid JSON: the error says where it is not.

    >>> parse_value("[1,8,64]"), parse_value("5"), parse_value("oltp_read_only")
    ([1, 8, 64], 5, 'oltp_read_only')
    >>> parse_value("[1,4")
    Traceback (most recent call last):
    ...
    ValueError: malformed JSON '[1,4': expected ',' delimiter at column 5
    >>> parse_value("[mariadb-10.11, mine, 64]")  # a list of bare words, as YAML writes one
    ['mariadb-10.11', 'mine', 64]
    """
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        if _BARE_LIST.match(text):
            return [parse_value(w.strip()) for w in text.strip()[1:-1].split(",")]
        if text.lstrip().startswith(("[", "{")):
            msg = e.msg.replace("Expecting", "expected")
            raise ValueError(f"malformed JSON {text!r}: {msg} at column {e.colno}") from None
    try:
        import yaml
        return yaml.safe_load(text)
    except Exception:  # noqa: BLE001 - not YAML either: a plain string
        return text


def _coerce(value: Any, hint: Any) -> Any:
    """Coerce `value` to the annotation `hint` (int, float, str, bool, list[...], dict, X | None)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _coerce(value, inner)
    if isinstance(value, str) and hint is not str:
        value = parse_value(value)
    if origin is list:
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, (list, tuple)):
            value = [value]
        return [_coerce(v, args[0]) for v in value]
    if origin is dict or hint is dict:
        if not isinstance(value, Mapping):
            raise TypeError(f"expected a mapping, got {value!r}")
        return dict(value)
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise TypeError(f"expected true/false, got {value!r}")
    if hint is int:
        if isinstance(value, bool) or not (isinstance(value, int) or
                                           (isinstance(value, float) and value.is_integer())):
            raise TypeError(f"expected a whole number, got {value!r}")
        return int(value)
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"expected a number, got {value!r}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise TypeError(f"expected a string, got {value!r}")
        return value
    raise TypeError(f"unsupported parameter type {hint!r}")


def fields(cls: type) -> dict[str, Any]:
    """Parameter names → type hints of a parameters dataclass (without `profile`)."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.name != "profile"}


def defaults(cls: type) -> dict[str, Any]:
    """Every field of `cls` that has a default, with it: a field's default is its value in
    every profile that does not change it."""
    out = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def profile_values(cls: type, profiles: Mapping[str, Mapping[str, Any]], profile: str) -> dict[str, Any]:
    """A profile's value of every parameter: the fields' defaults, overlaid with what the
    profile changes (a profile lists only that). The one reading of a profile: parameter
    loading, the study READMEs' tables, `dbstudies list`, "changed parameters" of a run.

    >>> @dataclasses.dataclass(kw_only=True)
    ... class X:
    ...     profile: str
    ...     a: int = 1
    ...     b: int
    >>> profile_values(X, {"quick": {"b": 2}, "full": {"a": 3, "b": 4}}, "full")
    {'a': 3, 'profile': 'full', 'b': 4}
    """
    return {**defaults(cls), **shared_profile(cls, profile), "profile": profile, **profiles[profile]}


def shared_profile(cls: type, profile: str) -> dict[str, Any]:
    """What `profile` changes for every study of `cls`'s kind (its `PROFILE_DEFAULTS`, e.g. a
    smoke run measures no busy step again), under the study's own profile."""
    return dict(getattr(cls, "PROFILE_DEFAULTS", {}).get(profile, {}))


def from_profile(cls: type, profiles: Mapping[str, Mapping[str, Any]], profile: str,
                 overrides: Mapping[str, Any] | None = None):
    """Profile defaults + overrides (None = keep the default) → a validated `cls`.

    `cls.validate()` (if any) returns a list of problems; all problems are raised together."""
    if profile not in profiles:
        raise ParamError([f"profile: unknown profile {profile!r}; choose one of {', '.join(profiles)}"
                          + did_you_mean(profile, list(profiles))])
    known = fields(cls)
    values = {**shared_profile(cls, profile), **profiles[profile]}
    problems = [f"{name}: unknown parameter{did_you_mean(name, list(known))}; known: {', '.join(known)}"
                for name in (overrides or {}) if name not in known]
    bad: set[str] = set()
    for name, value in (overrides or {}).items():
        if name in known and value is not None:
            try:
                values[name] = _coerce(value, known[name])
            except (TypeError, ValueError) as e:
                problems.append(f"{name}: {e}")
                bad.add(name)  # validated below with the profile's value: reported once
    obj = cls(profile=profile, **values)
    problems += [p for p in (obj.validate() if hasattr(obj, "validate") else [])
                 if p.split(":", 1)[0] not in bad]
    if problems:
        raise ParamError(problems)
    return obj


def written(meta: Mapping[str, Any]) -> dict[str, Any]:
    """A run's parameters as its metadata records them (names and values as given, `profile`
    included; {} for none) — the one place that reads them back: typed, through `recorded`
    (`Run.params`), or as written for a view that shows or repeats the record (the rerun
    command, the parameters table).

    >>> written({"parameters": {"profile": "smoke", "threads": [1]}}), written({})
    ({'profile': 'smoke', 'threads': [1]}, {})
    """
    given = meta.get("parameters")
    return dict(given) if isinstance(given, Mapping) else {}


def recorded(cls: type, profiles: Mapping[str, Mapping[str, Any]], parameters: Mapping[str, Any]):
    """A recorded run's parameters as `cls`, typed and not validated (a run is read on a
    machine that may lack its servers): every value it recorded of a field `cls` still has
    (one since removed is dropped). A field the run predates takes its profile's value — a
    field is added with the profiles set to what the code did before it (`schedulers`: one in
    the versions face) — except those `cls.PREDATED` names, which take their default: a mode
    the run cannot have used (`target`: a run recorded before it measured fixed rounds, even
    where its profile now measures to a target).

    >>> from dataclasses import dataclass, field
    >>> @dataclass(frozen=True)
    ... class X:
    ...     PREDATED = frozenset({"target"})
    ...     profile: str
    ...     n: int
    ...     target: dict = field(default_factory=dict)
    >>> recorded(X, {"quick": {"n": 4, "target": {"qps": 0.2}}}, {"profile": "quick", "n": "8", "gone": 1})
    X(profile='quick', n=8, target={})
    >>> recorded(X, {"quick": {"n": 4}}, {"profile": "quick"}).n
    4
    """
    values = dict(parameters)
    profile = str(values.pop("profile", None) or next(iter(profiles)))
    known = fields(cls)
    given = {k: v for k, v in {**shared_profile(cls, profile), **profiles.get(profile, {})}.items()
             if k not in getattr(cls, "PREDATED", ())}
    kept = {k: (_coerce(v, known[k]) if v is not None else None) for k, v in values.items() if k in known}
    return cls(profile=profile, **{**given, **kept})


def keep_nones(obj: Any, values: Mapping[str, Any]) -> Any:
    """`obj` with every field that `values` (a run's recorded parameters) holds as None set to
    None: there None is the run's value (unpinned, no budget), not "the profile's" as an
    override's None is (`from_profile`) — a smoke run recorded unpinned is not read back pinned.

    >>> @dataclasses.dataclass(frozen=True)
    ... class X:
    ...     cpus: str | None = None
    >>> keep_nones(X(cpus="0"), {"cpus": None, "other": None})
    X(cpus=None)
    """
    known = {f.name for f in dataclasses.fields(obj)}
    return dataclasses.replace(obj, **{k: None for k, v in values.items() if v is None and k in known})


def as_dict(obj: Any) -> dict[str, Any]:
    return dataclasses.asdict(obj)


# ---------------------------------------------------------------- shared validators
# Each returns a list of problems ("name: what is wrong"), empty when all is well.

def check_choices(name: str, values: list[str], allowed: tuple[str, ...]) -> list[str]:
    """Distinct values, each from `allowed`.

    >>> check_choices("w", ["a", "c"], ("a", "b"))
    ["w: need distinct values from a, b; got ['a', 'c']"]
    >>> check_choices("workloads", ["oltp_read_onyl"], ("oltp_read_only", "tpcc"))
    ["workloads: need distinct values from oltp_read_only, tpcc; got ['oltp_read_onyl'] — did you mean 'oltp_read_only'?"]
    """
    bad = [v for v in values if v not in allowed]
    if not values or bad or len(set(values)) != len(values):
        return [f"{name}: need distinct values from {', '.join(allowed)}; got {values}"
                + "".join(did_you_mean(v, allowed) for v in bad)]
    return []


def check_min(obj: Any, **lows: float) -> list[str]:
    """Each named field of `obj` is at least its low bound."""
    return [f"{name}: must be ≥ {low}, got {getattr(obj, name)}"
            for name, low in lows.items() if getattr(obj, name) < low]


def meanings(cls: type) -> dict[str, str]:
    """What each parameter of `cls` means: the `MEANINGS` of its classes, a subclass's
    words replacing its bases' (a study says what `repeats` or `workloads` are for it)."""
    out: dict[str, str] = {}
    for c in reversed(cls.__mro__):
        out.update(vars(c).get("MEANINGS", {}))
    return out


def shown(value: Any) -> str:
    """A parameter's value as the study READMEs' tables and `dbstudies list` show it.

    >>> shown(None), shown(True), shown([1, 16]), shown({"a": 1}), shown(0.05)
    ('none', 'true', '1, 16', '{"a": 1}', '0.05')
    """
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return ", ".join(map(str, value))
    if isinstance(value, dict):
        return json.dumps(value)
    return str(value)



def table(cls: type, profiles: Mapping[str, Mapping[str, Any]]) -> str:
    """The Markdown table of `cls`'s parameters: each one's value in every profile and what
    it means — generated into the README (`dbstudies list --write-readme`), never by hand."""
    words = meanings(cls)
    rows = ["| parameter | smoke | quick | full | meaning |", "|---|---|---|---|---|"]
    every = {p: profile_values(cls, profiles, p) for p in PROFILES}
    for name in fields(cls):
        values = " | ".join(shown(every[p][name]) for p in PROFILES)
        rows.append(f"| `{name}` | {values} | {words.get(name, '')} |")
    return "\n".join(rows)
