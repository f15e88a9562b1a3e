"""Search spaces: load and validate YAML files, suggest parameters, turn them into launch settings.

A space file lists `fixed` settings (applied to every trial, the default included) and
`parameters` (what the tuner searches). A parameter says how it is applied: `env` (exported to
every rank), `mca` (Open MPI MCA parameter) or `mpirun` (argv options per choice). Conditions
(`when`) and per-collective parameters (`collectives`) keep meaningless combinations out.
Names and values are checked against allow-lists here, so nothing unsafe reaches a launch.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import SpaceError
from .units import parse_size

SPACES_DIR = Path(__file__).resolve().parent.parent / "search_spaces"
MAX_SPACE_BYTES = 256 * 1024
APPLY_KINDS = ("env", "mca", "mpirun")
TYPES = ("categorical", "size", "int", "bool")

ENV_NAME_RE = re.compile(r"^[A-Z][A-Z0-9_]{0,127}$")
MCA_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,127}$")
VALUE_RE = re.compile(r"^[A-Za-z0-9_.,:+][A-Za-z0-9_.,:+-]{0,255}$")
MPIRUN_ARG_RE = re.compile(r"^-{0,2}[A-Za-z0-9_][A-Za-z0-9_.,:=+-]{0,127}$")

# Never settable from a space: they load code, run commands or write files.
DENIED_ENV = re.compile(
    r"^(LD_.*|PATH|PYTHON.*|HOME|SHELL|IFS|ENV|BASH_ENV|UCX_GDB_COMMAND|UCX_.*_FILE.*|"
    r"UCX_LOG_.*|UCX_HANDLE_ERRORS|UCX_MODULE_DIR|OMPI_.*|OPAL_.*|PMIX_.*|AUTOTUNE_.*)$")
DENIED_MCA = re.compile(
    r"^(mca_param_files|mca_base_.*|plm_rsh_agent|plm_rsh_args|orte_launch_agent|"
    r"orte_.*_agent|.*_prefix|.*_filename|.*_file|.*_path|.*_dir|opal_.*)$")
DENIED_MPIRUN = re.compile(r"^--?(launch-agent|prefix|app|tune|x|mca|gmca|am|wdir|path|"
                           r"output-filename|hostfile|machinefile|host|H|np|n|c)(=.*)?$")


@dataclass(frozen=True)
class Setting:
    """A value applied to a launch: env var, MCA param, or raw mpirun arguments."""

    apply: str
    name: str
    value: str = ""
    args: tuple[str, ...] = ()


@dataclass(frozen=True)
class LaunchSettings:
    env: tuple[tuple[str, str], ...] = ()
    mca: tuple[tuple[str, str], ...] = ()
    mpirun_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class Parameter:
    name: str
    apply: str
    type: str
    default: Any
    choices: tuple[Any, ...] = ()
    low: int | None = None
    high: int | None = None
    step: int = 1
    log: bool = False
    when: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    collectives: tuple[str, ...] = ()
    implies: tuple[tuple[str, str], ...] = ()  # MCA settings added when value != default
    args: tuple[tuple[Any, tuple[str, ...]], ...] = ()  # mpirun: choice -> argv
    source: str = ""
    help: str = ""

    def applies_to(self, collective: str) -> bool:
        return not self.collectives or collective in self.collectives

    def active(self, params: Mapping[str, Any]) -> bool:
        return all(params.get(name, _MISSING) in values for name, values in self.when)

    def format_value(self, value: Any) -> str:
        """The string the MPI sees: MCA sizes in bytes, UCX sizes as written (`8kb`, `auto`)."""
        if self.type == "bool":
            return "1" if value else "0"
        if self.type == "size" and self.apply == "mca" and str(value) != "auto":
            return str(parse_size(str(value)))
        return str(value)


_MISSING = object()


@dataclass(frozen=True)
class SearchSpace:
    name: str
    description: str
    fixed: tuple[Setting, ...]
    parameters: tuple[Parameter, ...]
    sources: tuple[str, ...] = field(default=())
    digest: str = ""

    def for_collective(self, collective: str) -> tuple[Parameter, ...]:
        return tuple(p for p in self.parameters if p.applies_to(collective))

    def suggest(self, trial: Any, collective: str) -> dict[str, Any]:
        """Define-by-run suggestion: inactive conditional parameters are never asked for."""
        params: dict[str, Any] = {}
        for p in self.for_collective(collective):
            if not p.active(params):
                continue
            if p.type == "int":
                params[p.name] = trial.suggest_int(p.name, p.low, p.high, step=p.step, log=p.log)
            else:
                params[p.name] = trial.suggest_categorical(p.name, list(p.choices))
        return params

    def defaults(self, collective: str) -> dict[str, Any]:
        """The MPI's own defaults for every parameter active in the default configuration."""
        params: dict[str, Any] = {}
        for p in self.for_collective(collective):
            if p.active(params):
                params[p.name] = p.default
        return params

    def settings(self, params: Mapping[str, Any], collective: str) -> LaunchSettings:
        """Fixed settings plus the parameters' values, validated again (values may come from storage)."""
        env: dict[str, str] = {}
        mca: dict[str, str] = {}
        argv: list[str] = []
        for s in self.fixed:
            _apply(s, env, mca, argv)
        for p in self.for_collective(collective):
            if p.name not in params:
                continue
            value = params[p.name]
            if p.type == "int":
                if not isinstance(value, int) or not p.low <= value <= p.high:
                    raise SpaceError(f"{self.name}: {p.name}={value!r} outside {p.low}..{p.high}")
            elif value not in p.choices:
                raise SpaceError(f"{self.name}: {p.name}={value!r} is not one of its choices")
            if p.apply == "mpirun":
                _apply(Setting("mpirun", p.name, args=dict(p.args)[value]), env, mca, argv)
            else:
                text = p.format_value(value)
                _check_value(self.name, p.name, text)
                _apply(Setting(p.apply, p.name, text), env, mca, argv)
            if value != p.default:
                for name, implied in p.implies:
                    mca[name] = implied
        return LaunchSettings(env=tuple(env.items()), mca=tuple(mca.items()), mpirun_args=tuple(argv))


def _apply(setting: Setting, env: dict, mca: dict, argv: list) -> None:
    if setting.apply == "env":
        env[setting.name] = setting.value
    elif setting.apply == "mca":
        mca[setting.name] = setting.value
    else:
        argv.extend(setting.args)


# --------------------------------------------------------------------------- loading

class _StrictLoader(yaml.SafeLoader):
    """Safe loading that also refuses duplicate keys (a silent override hides mistakes)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _parse_yaml(text: str, origin: str) -> Any:
    try:
        for event in yaml.parse(text, Loader=_StrictLoader):
            if isinstance(event, yaml.AliasEvent):
                raise SpaceError(f"{origin}: YAML aliases are not allowed in a search space")
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or exc.__class__.__name__
        raise SpaceError(f"{origin}{where}: invalid YAML: {problem}") from None


def available_spaces() -> dict[str, Path]:
    return {p.stem: p for p in sorted(SPACES_DIR.glob("*.yaml"))}


def load_space(spec: str) -> SearchSpace:
    """A shipped space name, a file path, or several joined with `+` (parameters must not clash)."""
    parts = [part.strip() for part in spec.split("+")]
    if len(parts) > 1 and not Path(spec).exists():
        spaces = [load_space(part) for part in parts]
        names: set[str] = set()
        for space in spaces:
            clash = names & {p.name for p in space.parameters}
            if clash:
                raise SpaceError(f"{spec}: parameter {sorted(clash)[0]} defined twice")
            names |= {p.name for p in space.parameters}
        digest = hashlib.sha256("".join(s.digest for s in spaces).encode()).hexdigest()[:16]
        return SearchSpace(name="+".join(s.name for s in spaces),
                           description="; ".join(s.description for s in spaces),
                           fixed=tuple(f for s in spaces for f in s.fixed),
                           parameters=tuple(p for s in spaces for p in s.parameters),
                           sources=tuple(src for s in spaces for src in s.sources), digest=digest)
    path = Path(spec)
    if not path.exists():
        shipped = available_spaces()
        if spec not in shipped:
            raise SpaceError(f"unknown search space {spec!r}: not a file, and not one of "
                             f"{', '.join(shipped) or 'the shipped spaces'}")
        path = shipped[spec]
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SpaceError(f"cannot read search space {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_SPACE_BYTES:
        raise SpaceError(f"{path}: larger than {MAX_SPACE_BYTES // 1024} KiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SpaceError(f"{path}: not UTF-8 text") from None
    if "\x00" in text:
        raise SpaceError(f"{path}: contains a NUL byte")
    space = parse_space(_parse_yaml(text, str(path)), str(path))
    return SearchSpace(**{**space.__dict__, "digest": hashlib.sha256(data).hexdigest()[:16]})


def parse_space(doc: Any, origin: str) -> SearchSpace:
    if not isinstance(doc, dict):
        raise SpaceError(f"{origin}: expected a mapping at the top level")
    _only_keys(doc, {"format", "name", "description", "stack", "sources", "fixed", "parameters"},
               origin)
    if doc.get("format", 1) != 1:
        raise SpaceError(f"{origin}: format: unsupported version {doc.get('format')!r} (expected 1)")
    name = doc.get("name")
    if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,63}", name):
        raise SpaceError(f"{origin}: name: must be a short lowercase identifier")
    fixed = tuple(_parse_fixed(item, f"{origin}: fixed[{i}]")
                  for i, item in enumerate(_list(doc.get("fixed", []), f"{origin}: fixed")))
    raw_params = _list(doc.get("parameters"), f"{origin}: parameters")
    params: list[Parameter] = []
    for i, item in enumerate(raw_params):
        where = f"{origin}: parameters[{i}]"
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            where = f"{origin}: parameter {item['name']}"
        param = _parse_parameter(item, where)
        if any(p.name == param.name and set(p.collectives or ["*"]) & set(param.collectives or ["*"])
               for p in params):
            raise SpaceError(f"{where}: defined twice")
        for cond, _ in param.when:
            if not any(p.name == cond for p in params):
                raise SpaceError(f"{where}: when: refers to {cond!r}, which is not an earlier parameter")
        params.append(param)
    if not params:
        raise SpaceError(f"{origin}: parameters: at least one parameter is needed")
    sources = tuple(str(s) for s in _list(doc.get("sources", []), f"{origin}: sources"))
    return SearchSpace(name=name, description=str(doc.get("description", "")).strip(),
                       fixed=fixed, parameters=tuple(params), sources=sources)


def _list(value: Any, where: str) -> list:
    if not isinstance(value, list):
        raise SpaceError(f"{where}: expected a list")
    return value


def _only_keys(item: dict, allowed: set[str], where: str) -> None:
    unknown = sorted(str(k) for k in item if k not in allowed)
    if unknown:
        raise SpaceError(f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")


def _check_name(apply: str, name: Any, where: str) -> str:
    if not isinstance(name, str):
        raise SpaceError(f"{where}: name: must be a string")
    if apply == "env":
        if not ENV_NAME_RE.match(name):
            raise SpaceError(f"{where}: {name!r} is not a valid environment variable name")
        if DENIED_ENV.match(name):
            raise SpaceError(f"{where}: {name} may not be set by a search space (deny-listed)")
    elif apply == "mca":
        if not MCA_NAME_RE.match(name):
            raise SpaceError(f"{where}: {name!r} is not a valid MCA parameter name")
        if DENIED_MCA.match(name):
            raise SpaceError(f"{where}: {name} may not be set by a search space (deny-listed)")
    elif apply == "mpirun":
        if not MCA_NAME_RE.match(name.lower().replace("-", "_")):
            raise SpaceError(f"{where}: {name!r} is not a valid parameter name")
    else:
        raise SpaceError(f"{where}: apply: must be one of {', '.join(APPLY_KINDS)}, not {apply!r}")
    return name


def _check_value(where: str, name: str, text: str) -> None:
    if not VALUE_RE.match(text):
        raise SpaceError(f"{where}: value {text!r} of {name} has characters outside "
                         "[A-Za-z0-9_.,:+-] or starts with '-'")


def _check_args(args: Any, where: str) -> tuple[str, ...]:
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise SpaceError(f"{where}: mpirun args must be a list of strings")
    for arg in args:
        if not MPIRUN_ARG_RE.match(arg):
            raise SpaceError(f"{where}: mpirun argument {arg!r} has unsafe characters")
        if DENIED_MPIRUN.match(arg):
            raise SpaceError(f"{where}: mpirun argument {arg} may not be set by a search space")
    return tuple(args)


def _scalar(value: Any, where: str) -> Any:
    if isinstance(value, bool) or isinstance(value, int) or isinstance(value, str):
        if isinstance(value, str):
            _check_value(where, "choice", value)
        return value
    raise SpaceError(f"{where}: choice {value!r} must be a string, integer or boolean")


def _parse_fixed(item: Any, where: str) -> Setting:
    if not isinstance(item, dict):
        raise SpaceError(f"{where}: expected a mapping")
    _only_keys(item, {"name", "apply", "value", "args", "why"}, where)
    apply = item.get("apply")
    name = _check_name(apply, item.get("name"), where)
    if apply == "mpirun":
        return Setting("mpirun", name, args=_check_args(item.get("args"), where))
    value = item.get("value")
    if isinstance(value, bool):
        value = int(value)
    if not isinstance(value, (str, int)):
        raise SpaceError(f"{where}: value: must be a string or integer")
    _check_value(where, name, str(value))
    return Setting(apply, name, str(value))


def _parse_parameter(item: Any, where: str) -> Parameter:
    if not isinstance(item, dict):
        raise SpaceError(f"{where}: expected a mapping")
    _only_keys(item, {"name", "apply", "type", "choices", "default", "low", "high", "step", "log",
                      "when", "collectives", "implies", "args", "source", "help"}, where)
    apply = item.get("apply")
    name = _check_name(apply, item.get("name"), where)
    kind = item.get("type", "categorical")
    if kind not in TYPES:
        raise SpaceError(f"{where}: type: must be one of {', '.join(TYPES)}, not {kind!r}")
    if "default" not in item:
        raise SpaceError(f"{where}: default: required (the MPI's own default)")
    default = item["default"]
    fields: dict[str, Any] = {}
    if kind == "int":
        low, high, step = item.get("low"), item.get("high"), item.get("step", 1)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (low, high, step)):
            raise SpaceError(f"{where}: low, high and step must be integers")
        if low > high:
            raise SpaceError(f"{where}: inverted range: low {low} > high {high}")
        if step < 1:
            raise SpaceError(f"{where}: step must be >= 1")
        if not isinstance(default, int) or not low <= default <= high:
            raise SpaceError(f"{where}: default {default!r} outside {low}..{high}")
        fields.update(low=low, high=high, step=step, log=bool(item.get("log", False)))
    else:
        if kind == "bool":
            choices: list[Any] = [False, True]
        else:
            choices = _list(item.get("choices"), f"{where}: choices")
        choices = [_scalar(c, f"{where}: choices") for c in choices]
        if len(choices) < 2:
            raise SpaceError(f"{where}: choices: at least two are needed")
        if len(set(map(str, choices))) != len(choices):
            raise SpaceError(f"{where}: choices: duplicates")
        if kind == "size":
            for c in choices:
                if str(c) != "auto":
                    try:
                        parse_size(str(c))
                    except Exception:
                        raise SpaceError(f"{where}: choice {c!r} is not a size such as 8kb or auto") from None
        if default not in choices:
            raise SpaceError(f"{where}: default {default!r} is not one of the choices")
        fields["choices"] = tuple(choices)
    if apply == "mpirun":
        raw_args = item.get("args")
        if not isinstance(raw_args, dict) or set(map(str, raw_args)) != set(map(str, fields.get("choices", ()))):
            raise SpaceError(f"{where}: args: must map every choice to a list of mpirun arguments")
        by_text = {str(k): v for k, v in raw_args.items()}
        fields["args"] = tuple((c, _check_args(by_text[str(c)], where)) for c in fields["choices"])
    elif "args" in item:
        raise SpaceError(f"{where}: args: only for apply: mpirun")
    when = item.get("when", {})
    if not isinstance(when, dict):
        raise SpaceError(f"{where}: when: expected a mapping of parameter -> list of values")
    fields["when"] = tuple((str(k), tuple(_list(v, f"{where}: when: {k}") if isinstance(v, list) else [v]))
                           for k, v in when.items())
    collectives = item.get("collectives", [])
    from .benchmarks.records import COLLECTIVES
    for c in _list(collectives, f"{where}: collectives"):
        if c not in COLLECTIVES:
            raise SpaceError(f"{where}: collectives: unknown collective {c!r}")
    implies = item.get("implies", {})
    if not isinstance(implies, dict):
        raise SpaceError(f"{where}: implies: expected a mapping of MCA parameter -> value")
    implied = []
    for k, v in implies.items():
        _check_name("mca", k, f"{where}: implies")
        _check_value(where, str(k), str(v))
        implied.append((str(k), str(v)))
    return Parameter(name=name, apply=apply, type=kind, default=default,
                     collectives=tuple(collectives), implies=tuple(implied),
                     source=str(item.get("source", "")), help=str(item.get("help", "")), **fields)
