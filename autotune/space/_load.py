"""Load search-space YAML safely and validate it; every error names the file, the key and why.

Safe loading plus: no duplicate keys, no aliases (no alias bombs), no tags beyond plain YAML, a
size cap, UTF-8 without NUL. Names and values must match allow-lists, and a deny-list that no
space can override keeps out anything that loads code, runs commands or writes files.
"""

from __future__ import annotations

import hashlib
import re
from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml

from ..errors import EnvironmentProblem, SpaceError
from ..files import MAX_YAML_DEPTH, decode_text, read_bytes_input
from ..units import parse_size
from ._model import (SCOPES, TYPES, UNSET, Compose, Parameter, Requirement, SearchSpace, Setting,
                     check_value)
from ._policy import check_args, check_name

# The shipped spaces live in search_spaces/ at the top of the repository; autotune/search_spaces is
# a symlink to it, so the package finds them as its resource both from a checkout (editable
# install) and in a wheel, which holds a copy (package-data in pyproject.toml).
SPACES_DIR = Path(str(files("autotune") / "search_spaces"))
MAX_SPACE_BYTES = 256 * 1024
STACKS = ("openmpi", "mpich", "cray-mpich", "any")
COLLECTIVES = ("allreduce", "allgather", "alltoall", "bcast", "reduce",
               "iallreduce", "iallgather", "ialltoall", "ibcast", "ireduce")  # + non-blocking
REQUIREMENT_KINDS = ("mca_component", "ucx_transport", "ucx_feature", "mpi", "scope")
REQUIRED_SCOPES = ("single-node", "multi-node")
CONTEXT_PROPERTIES = ("nps",)
PROBED_SELECTORS = ("pml",)  # selectors whose own choice on the nodes the probe can tell

PLACEHOLDER_RE = re.compile(r"\{([A-Za-z][A-Za-z0-9_]*)\}")



class _StrictLoader(yaml.SafeLoader):
    """Safe loading that also refuses duplicate keys (a silent override hides mistakes)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if not isinstance(key, (str, int, bool, float)) and key is not None:
            raise yaml.constructor.ConstructorError(
                None, None, "a key must be a plain value, not a list or mapping",
                key_node.start_mark)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def parse_yaml(text: str, origin: str) -> Any:
    """Events first (no alias, nesting at most MAX_YAML_DEPTH, stopping at the first offence:
    PyYAML's scanner is quadratic in flow nesting), then the strict load."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=_StrictLoader):
            if isinstance(event, yaml.AliasEvent):
                raise SpaceError(f"{origin}: YAML aliases are not allowed in a search space")
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    raise SpaceError(f"{origin} (line {event.start_mark.line + 1}): nested "
                                     f"deeper than {MAX_YAML_DEPTH} levels")
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                depth -= 1
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or exc.__class__.__name__
        raise SpaceError(f"{origin}{where}: invalid YAML: {problem}") from None


def available_spaces() -> dict[str, Path]:
    """The shipped spaces by name. None found means a broken install, never an empty list."""
    spaces = {p.stem: p for p in sorted(SPACES_DIR.glob("*.yaml"))}
    if not spaces:
        raise EnvironmentProblem(
            f"the search spaces shipped with autotune are missing (no *.yaml in {SPACES_DIR}): "
            "this autotune install is broken; reinstall it (pip install --force-reinstall "
            "autotune, or scripts/install.sh in a checkout)")
    return spaces


def load_space(spec: str) -> SearchSpace:
    """A shipped space name, a file path, or several joined with `+` (parameters must not clash)."""
    if "+" in spec and not Path(spec).exists():
        spaces = [load_space(part.strip()) for part in spec.split("+")]
        names: set[str] = set()
        for space in spaces:
            clash = names & {p.name for p in space.parameters}
            if clash:
                raise SpaceError(f"{spec}: parameter {sorted(clash)[0]} defined twice")
            names |= {p.name for p in space.parameters}
        stacks = {s.stack for s in spaces} - {"any"}
        if len(stacks) > 1:
            raise SpaceError(f"{spec}: spaces for different MPI stacks cannot be combined "
                             f"({', '.join(sorted(stacks))})")
        digest = hashlib.sha256("".join(s.digest for s in spaces).encode()).hexdigest()[:16]
        return SearchSpace(name="+".join(s.name for s in spaces),
                           description="; ".join(s.description for s in spaces),
                           stack=next(iter(stacks), "any"),
                           fixed=tuple(f for s in spaces for f in s.fixed),
                           parameters=tuple(p for s in spaces for p in s.parameters),
                           compose=tuple(c for s in spaces for c in s.compose),
                           sources=tuple(src for s in spaces for src in s.sources), digest=digest)
    path = Path(spec)
    if not path.is_file():
        shipped = available_spaces()
        if spec not in shipped:
            raise SpaceError(f"unknown search space {spec!r}: not a file, and not one of "
                             f"{', '.join(shipped) or 'the shipped spaces'}")
        path = shipped[spec]
    data = read_bytes_input(path, "search space", MAX_SPACE_BYTES, SpaceError)
    text = decode_text(data, "search space", path, SpaceError)
    space = parse_space(parse_yaml(text, str(path)), str(path))
    return SearchSpace(**{**space.__dict__, "digest": hashlib.sha256(data).hexdigest()[:16]})


def parse_space(doc: Any, origin: str) -> SearchSpace:
    if not isinstance(doc, dict):
        raise SpaceError(f"{origin}: expected a mapping at the top level")
    _only_keys(doc, {"format", "name", "description", "stack", "sources", "fixed", "parameters",
                     "compose"}, origin)
    if doc.get("format", 1) != 1:
        raise SpaceError(f"{origin}: format: unsupported version {doc.get('format')!r} (expected 1)")
    name = doc.get("name")
    if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,63}", name):
        raise SpaceError(f"{origin}: name: must be a short lowercase identifier")
    stack = doc.get("stack", "any")
    if stack not in STACKS:
        raise SpaceError(f"{origin}: stack: must be one of {', '.join(STACKS)}, not {stack!r}")
    fixed = tuple(_parse_fixed(item, f"{origin}: fixed[{i}]")
                  for i, item in enumerate(_list(doc.get("fixed", []), f"{origin}: fixed")))
    params: list[Parameter] = []
    for i, item in enumerate(_list(doc.get("parameters"), f"{origin}: parameters")):
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
    compose = tuple(_parse_compose(item, f"{origin}: compose[{i}]", params)
                    for i, item in enumerate(_list(doc.get("compose", []), f"{origin}: compose")))
    names = {p.name for p in params}
    for p in params:
        for other in p.yields_to:
            if other not in names or other == p.name:
                raise SpaceError(f"{origin}: parameter {p.name}: yields_to: {other!r} is not another "
                                 "parameter of this space")
    used = {part for c in compose for part in c.parts}
    for p in params:
        if p.apply == "template" and p.name not in used:
            raise SpaceError(f"{origin}: parameter {p.name}: apply: template but no compose entry uses it")
    sources = tuple(str(s) for s in _list(doc.get("sources", []), f"{origin}: sources"))
    return SearchSpace(name=name, description=str(doc.get("description", "")).strip(),
                       stack=stack, fixed=fixed, parameters=tuple(params), compose=compose,
                       sources=sources)


def _list(value: Any, where: str) -> list:
    if not isinstance(value, list):
        raise SpaceError(f"{where}: expected a list")
    return value


def _only_keys(item: dict, allowed: set[str], where: str) -> None:
    unknown = sorted(str(k) for k in item if k not in allowed)
    if unknown:
        raise SpaceError(f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")


def _scalar(value: Any, where: str) -> Any:
    if isinstance(value, (bool, int, str)):
        if isinstance(value, str):
            check_value(where, "choice", value)
        return value
    raise SpaceError(f"{where}: choice {value!r} must be a string, integer or boolean")


def _parse_requirements(raw: Any, where: str) -> tuple[Requirement, ...]:
    if not isinstance(raw, dict):
        raise SpaceError(f"{where}: expected a mapping such as {{mca_component: coll/hcoll}}")
    out = []
    for kind, value in raw.items():
        if kind not in REQUIREMENT_KINDS:
            raise SpaceError(f"{where}: unknown requirement {kind!r} "
                             f"(known: {', '.join(REQUIREMENT_KINDS)})")
        values = value if isinstance(value, list) else [value]
        for v in values:
            if not isinstance(v, str) or not re.fullmatch(r"[a-z0-9_/-]{1,64}", v):
                raise SpaceError(f"{where}: {kind}: {v!r} is not a valid name")
            if kind == "scope" and v not in REQUIRED_SCOPES:
                raise SpaceError(f"{where}: scope: {v!r} is not one of {', '.join(REQUIRED_SCOPES)}")
            if kind == "mca_component" and "/" not in v:
                raise SpaceError(f"{where}: mca_component: write framework/component, e.g. coll/hcoll")
            out.append(Requirement(kind, v))
    return tuple(out)


def _parse_fixed(item: Any, where: str) -> Setting:
    if not isinstance(item, dict):
        raise SpaceError(f"{where}: expected a mapping")
    _only_keys(item, {"name", "apply", "value", "args", "why"}, where)
    apply = item.get("apply")
    if apply not in ("env", "mca", "mpirun"):
        raise SpaceError(f"{where}: apply: a fixed setting is env, mca or mpirun, not {apply!r}")
    name = check_name(apply, item.get("name"), where)
    if apply == "mpirun":
        return Setting("mpirun", name, args=check_args(item.get("args"), where),
                       why=str(item.get("why", "")))
    value = item.get("value")
    if isinstance(value, bool):
        value = int(value)
    if not isinstance(value, (str, int)):
        raise SpaceError(f"{where}: value: must be a string or integer")
    check_value(where, name, str(value))
    return Setting(apply, name, str(value), why=str(item.get("why", "")))


def _parse_compose(item: Any, where: str, params: list[Parameter]) -> Compose:
    if not isinstance(item, dict):
        raise SpaceError(f"{where}: expected a mapping")
    _only_keys(item, {"name", "apply", "template"}, where)
    apply = item.get("apply")
    if apply not in ("env", "mca"):
        raise SpaceError(f"{where}: apply: a composed value is env or mca, not {apply!r}")
    name = check_name(apply, item.get("name"), where)
    template = item.get("template")
    if not isinstance(template, str):
        raise SpaceError(f"{where}: template: must be a string such as intra:{{A}},inter:{{B}}")
    parts = tuple(PLACEHOLDER_RE.findall(template))
    if not parts:
        raise SpaceError(f"{where}: template: names no parameter")
    check_value(where, name, PLACEHOLDER_RE.sub("x", template))
    by_name = {p.name: p for p in params}
    for part in parts:
        if part not in by_name or by_name[part].apply != "template":
            raise SpaceError(f"{where}: template: {{{part}}} is not a parameter with apply: template")
    return Compose(apply=apply, name=name, template=template, parts=parts)


def _parse_choice_implies(raw: Any, choices: tuple[Any, ...], default: Any, where: str
                          ) -> tuple[tuple[Any, tuple[tuple[str, str], ...]], ...]:
    """choice -> MCA settings that come with it (pml ucx -> pml_ucx_devices=any, ...)."""
    if not isinstance(raw, dict):
        raise SpaceError(f"{where}: choice_implies: expected a mapping of choice -> MCA settings")
    out = []
    for choice, settings in raw.items():
        if choice not in choices or choice == default:
            raise SpaceError(f"{where}: choice_implies: {choice!r} is not a non-default choice")
        if not settings:
            raise SpaceError(f"{where}: choice_implies: {choice}: expected MCA parameter -> value")
        out.append((choice, _mca_settings(settings, f"{where}: choice_implies: {choice}")))
    return tuple(out)


def _mca_settings(raw: Any, where: str) -> tuple[tuple[str, str], ...]:
    """A mapping of MCA parameter -> value (implies, choice_implies), each checked like a knob."""
    if not isinstance(raw, dict):
        raise SpaceError(f"{where}: expected a mapping of MCA parameter -> value")
    pairs = []
    for k, v in raw.items():
        check_name("mca", k, where)
        check_value(where, str(k), str(v))
        pairs.append((str(k), str(v)))
    return tuple(pairs)


def _parse_parameter(item: Any, where: str) -> Parameter:
    if not isinstance(item, dict):
        raise SpaceError(f"{where}: expected a mapping")
    _only_keys(item, {"name", "apply", "type", "choices", "default", "low", "high", "step", "log",
                      "when", "collectives", "scope", "implies", "args", "requires",
                      "choice_requires", "choice_implies", "unset_means", "choices_from", "context",
                      "yields_to", "source", "help"},
                where)
    apply = item.get("apply")
    name = check_name(apply, item.get("name"), where)
    kind = item.get("type", "categorical")
    if kind not in TYPES:
        raise SpaceError(f"{where}: type: must be one of {', '.join(TYPES)}, not {kind!r}")
    if "default" not in item:
        raise SpaceError(f"{where}: default: required (the MPI's own default)")
    default = item["default"]
    fields: dict[str, Any] = {}
    choices_from = item.get("choices_from", "")
    if choices_from not in ("", "ompi_info"):
        raise SpaceError(f"{where}: choices_from: only ompi_info is supported, not {choices_from!r}")
    if choices_from and apply != "mca":
        raise SpaceError(f"{where}: choices_from: ompi_info only lists MCA parameters")
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
    elif choices_from and "choices" not in item:
        fields["choices"] = ()
        if not isinstance(default, int):
            raise SpaceError(f"{where}: default: an enumerated MCA value is an integer")
    else:
        choices = [False, True] if kind == "bool" else _list(item.get("choices"), f"{where}: choices")
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
        fields["args"] = tuple((c, check_args(by_text[str(c)], where)) for c in fields["choices"])
        if dict(fields["args"])[default]:
            raise SpaceError(f"{where}: args: the default {default!r} must add no argument (it is "
                             "the MPI's own behaviour, never applied)")
    elif "args" in item:
        raise SpaceError(f"{where}: args: only for apply: mpirun")
    if apply == "context":
        context = item.get("context")
        if context not in CONTEXT_PROPERTIES:
            raise SpaceError(f"{where}: context: must name an allocation property "
                             f"({', '.join(CONTEXT_PROPERTIES)})")
        fields["context"] = context
    elif "context" in item:
        raise SpaceError(f"{where}: context: only for apply: context")
    when = item.get("when", {})
    if not isinstance(when, dict):
        raise SpaceError(f"{where}: when: expected a mapping of parameter -> list of values")
    fields["when"] = tuple((str(k), tuple(_list(v, f"{where}: when: {k}") if isinstance(v, list) else [v]))
                           for k, v in when.items())
    collectives = _list(item.get("collectives", []), f"{where}: collectives")
    for c in collectives:
        if c not in COLLECTIVES:
            raise SpaceError(f"{where}: collectives: unknown collective {c!r}")
    scope = item.get("scope", "any")
    if scope not in SCOPES:
        raise SpaceError(f"{where}: scope: must be one of {', '.join(SCOPES)}, not {scope!r}")
    implied = _mca_settings(item.get("implies", {}), f"{where}: implies")
    yields_to = tuple(str(n) for n in _list(item.get("yields_to", []), f"{where}: yields_to"))
    requires = _parse_requirements(item["requires"], f"{where}: requires") if "requires" in item else ()
    choice_requires = []
    raw_choice_requires = item.get("choice_requires", {})
    if not isinstance(raw_choice_requires, dict):
        raise SpaceError(f"{where}: choice_requires: expected a mapping of choice -> requirements")
    for choice, raw in raw_choice_requires.items():
        if choice not in fields.get("choices", ()):
            raise SpaceError(f"{where}: choice_requires: {choice!r} is not one of the choices")
        if choice == default:
            raise SpaceError(f"{where}: choice_requires: the default {choice!r} must always be possible")
        choice_requires.append((choice, _parse_requirements(raw, f"{where}: choice_requires: {choice}")))
    unset_means = item.get("unset_means", "")
    if unset_means not in ("", "probe"):
        raise SpaceError(f"{where}: unset_means: only probe is supported, not {unset_means!r}")
    if unset_means and (name not in PROBED_SELECTORS or UNSET not in fields.get("choices", ())):
        raise SpaceError(f"{where}: unset_means: probe needs a choice {UNSET!r} and a selector the "
                         f"probe knows ({', '.join(PROBED_SELECTORS)})")
    return Parameter(name=name, apply=apply, type=kind, default=default, scope=scope,
                     collectives=tuple(collectives), implies=implied, requires=requires,
                     choice_requires=tuple(choice_requires), choices_from=choices_from,
                     choice_implies=_parse_choice_implies(item.get("choice_implies", {}),
                                                          fields.get("choices", ()), default, where),
                     unset_means=unset_means, yields_to=yields_to,
                     source=str(item.get("source", "")), help=str(item.get("help", "")), **fields)
