"""The kind-agnostic scenario loader: the frozen model base, the one-line error, reading YAML, and
the kinds by name. A kind is a package of ``bench`` (or of a ``COMMBENCH_PLUGINS`` package) that
registers itself in its ``__init__``, naming its model and entry as ``"module:attribute"``,
imported on first use, so loading one kind costs nothing of another."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bench.argtypes import UsageError
from kernels.registry import Registry, lazy

PositiveInt = Annotated[int, Field(ge=1)]
MAX_SCENARIO_BYTES = 1 << 20  # a scenario is a short text file; more is a wrong path


class ScenarioError(UsageError, ValueError):
    """A scenario that cannot run; ``str()`` is the one line shown to the user (it names the
    scenario's source, so no command)."""


@dataclass(frozen=True)
class ScenarioKind:
    name: str  # the scenario's ``kind:`` key
    model: str  # "module:Class", the frozen model that validates the scenario
    run: str  # "module:run", the entry: (args, scenario, --world-sizes) -> exit code
    order: int = 1000  # listing order (the default kind, collective, first)


KINDS: Registry[ScenarioKind] = Registry("scenario kind", ("bench.*",), order=lambda k: k.order)


def run_scenario(args: Any, sc: Any, sizes: tuple[int, ...] = ()) -> int:
    """Run ``sc`` by its kind's entry (``--world-sizes``: ``sizes``); the exit code."""
    return int(lazy(KINDS.get(sc.kind).run)(args, sc, sizes))


def register(kind: ScenarioKind) -> ScenarioKind:
    """Called once, in the ``__init__`` of each kind's package."""
    return KINDS.add(kind.name, kind)


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=False)


class Scenario(Frozen):
    """What every kind's scenario is: its ``name``, its ``kind`` (a kind narrows it to the name
    it registers) and ``world_sizes`` (a field, or a property where a kind runs one job), what
    ``commbench run`` launches."""

    name: str
    kind: str

    def revalidated(self, where: str, **changes: Any) -> Any:
        """This scenario with ``changes`` (values a command line gave), validated again;
        :class:`ScenarioError` (one line, after ``where``) when they do not fit it."""
        try:
            return type(self).model_validate({**self.model_dump(), **changes})
        except ValidationError as e:
            line = one_line(e, type(self))
            raise ScenarioError(f"{where}: {line}" if where else line) from None


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects a key given twice (PyYAML silently keeps the last one)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} given twice", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: Path) -> Any:
    """The YAML document in ``path``; :class:`ScenarioError` with one line for a missing file, a
    directory, a binary or non-UTF-8 file, an oversized file or invalid YAML."""
    try:
        if path.is_dir():
            raise ScenarioError(f"{path}: is a directory, not a scenario file")
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such scenario file") from None
    except OSError as e:
        raise ScenarioError(f"{path}: cannot read ({e.strerror})") from None
    if len(raw) > MAX_SCENARIO_BYTES:
        raise ScenarioError(f"{path}: {len(raw)} bytes is not a scenario file (limit 1 MiB)")
    if b"\0" in raw:
        hint = " (UTF-16? save it as UTF-8)" if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
        raise ScenarioError(f"{path}: a binary file, not YAML text{hint}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ScenarioError(f"{path}: not UTF-8 text (byte {e.start})") from None
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        problem = " ".join(str(getattr(e, "problem", None) or e).split())
        raise ScenarioError(f"{path}:{where} not valid YAML ({problem})") from None
    except RecursionError:
        raise ScenarioError(f"{path}: YAML nested too deeply") from None


def one_line(e: ValidationError, model: type[BaseModel] | None = None) -> str:
    """Pydantic's first error as ``key.path: message``; an unknown key of ``model`` (or of a
    model nested in it) with the nearest known key ("did you mean"). An unknown key goes first:
    a misspelt required key is also reported missing, and the misspelling is the cause."""
    errors = e.errors()
    err = next((x for x in errors if x["type"] == "extra_forbidden"), errors[0])
    loc = ".".join(str(x) for x in err["loc"] if x not in ("list", "sweep", "all", "mapping"))
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        msg = "unknown key" + _did_you_mean(model, err["loc"])
    return f"{loc}: {msg}" if loc else msg


def _did_you_mean(model: type[BaseModel] | None, loc: tuple[Any, ...]) -> str:
    """`` (did you mean KEY?)`` for the last key of ``loc``, looked up through ``model``'s nested
    models; '' when none is near or the path leaves the models."""
    import difflib
    import typing

    for key in loc[:-1]:
        field = model.model_fields.get(str(key)) if model is not None else None
        if field is None:
            return ""
        kinds = [field.annotation, *typing.get_args(field.annotation)]
        model = next((t for t in kinds if isinstance(t, type) and issubclass(t, BaseModel)), None)
    if model is None:
        return ""
    near = difflib.get_close_matches(str(loc[-1]), list(model.model_fields), n=1, cutoff=0.6)
    return f" (did you mean {near[0]}?)" if near else ""


def load_scenario(path: Path | str) -> Any:
    """Parse and validate a scenario file; raises :class:`ScenarioError` with one line."""
    path = Path(path)
    return parse_scenario(read_yaml(path), str(path))


def parse_scenario(raw: Any, source: str = "<scenario>") -> Any:
    """The scenario of ``raw`` (a mapping), validated by its kind's model."""
    if not isinstance(raw, dict):
        raise ScenarioError(f"{source}: a scenario is a mapping of keys, got {type(raw).__name__}")
    raw = dict(raw)
    raw.setdefault("name", Path(source).stem)
    kind = raw.get("kind", "collective")
    if not isinstance(kind, str) or kind not in KINDS:
        raise ScenarioError(f"{source}: kind: unknown kind {kind!r}; valid: "
                            f"{', '.join(KINDS.names())}")
    try:
        model = lazy(KINDS.get(kind).model)
        return model.model_validate(raw)
    except ValidationError as e:
        raise ScenarioError(f"{source}: {one_line(e, model)}") from None
    except RecursionError:
        raise ScenarioError(f"{source}: nested too deeply") from None
