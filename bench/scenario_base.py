"""What every scenario kind shares: the frozen model base, the one-line error, and reading YAML.

Kept apart from the kinds themselves so that ``bench.collective.scenario`` (collectives) and
``bench.training.scenario`` never import each other, and loading a scenario of one kind costs
nothing of the other (validating a training scenario imports no torch).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

PositiveInt = Annotated[int, Field(ge=1)]
MAX_SCENARIO_BYTES = 1 << 20  # a scenario is a short text file; more is a wrong path


class ScenarioError(ValueError):
    """A scenario that cannot run; ``str()`` is the one line shown to the user."""


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=False)


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


def one_line(e: ValidationError) -> str:
    """Pydantic's first error as ``key.path: message``."""
    err = e.errors()[0]
    loc = ".".join(str(x) for x in err["loc"] if x not in ("list", "sweep", "all", "mapping"))
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        msg = "unknown key"
    return f"{loc}: {msg}" if loc else msg
