"""Variants: the vendor call (``native``, ``native_inplace``) under named settings, as one more
algorithm of a collective scenario (docs/scenarios.md, "Variants of the vendor call"). The
settings are read by the library as it starts, so a variant's cases run in a job of their own."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import (
    BeforeValidator,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_serializer,
    model_validator,
)

from bench.collective import vendor_settings
from bench.scenario_base import Frozen
from kernels.algorithm import VENDOR, VENDOR_INPLACE

JOB_ENV = "COMMBENCH_JOB_ENV"  # a self-launched job's index in environments(): its cases
BASES = (VENDOR, VENDOR_INPLACE)  # what a variant may be of
Settings = tuple[tuple[str, str], ...]  # sorted (variable, value) pairs: one job's environment


def _value(v: Any) -> Any:
    """An environment value as text: YAML reads ``0`` as an int and ``off`` as a bool."""
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int | float):
        return str(v)
    return v


class Variant(Frozen):
    """``{native: {name: NAME, env: {VARIABLE: value, ...}}}``."""

    of: str  # the vendor algorithm run under the settings
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$")]
    env: Annotated[dict[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")],
                        Annotated[str, BeforeValidator(_value)]], Field(min_length=1)]

    @model_validator(mode="before")
    @classmethod
    def _spelled(cls, raw: Any) -> Any:
        if isinstance(raw, Mapping) and len(raw) == 1:
            (of, body), = raw.items()
            if of not in BASES:
                raise ValueError(f"a variant is of {' or '.join(BASES)}, got {of!r} "
                                 f"(write {{native: {{name: ..., env: {{...}}}}}})")
            if not isinstance(body, Mapping):
                raise ValueError(f"{of}: give name and env, e.g. {{{of}: {{name: my-{of}, "
                                 "env: {VARIABLE: value}}}")
            return {"of": of, **body}
        return raw

    @field_validator("env")
    @classmethod
    def _meaningful(cls, env: dict[str, str]) -> dict[str, str]:
        vendor_settings.check_env(env)
        return env

    @model_serializer
    def _dump(self) -> dict[str, Any]:  # as written, so a run's scenario.yaml reads back the same
        return {self.of: {"name": self.name, "env": dict(self.env)}}

    @property
    def settings(self) -> Settings:
        return tuple(sorted(self.env.items()))


# one entry of an algorithms list: a name, or a mapping that is a variant
Item = Annotated[Annotated[str, Tag("name")] | Annotated[Variant, Tag("variant")],
                 Discriminator(lambda v: "name" if isinstance(v, str) else "variant")]


def names_of(items: Sequence[Item]) -> list[str]:
    """The algorithm names a list runs (a variant by its name)."""
    return [i.name if isinstance(i, Variant) else i for i in items]


def collect(lists: Sequence[Sequence[Item]]) -> dict[str, Variant]:
    """The variants of a scenario by name; ValueError when one name is given two meanings."""
    out: dict[str, Variant] = {}
    for items in lists:
        for v in items:
            if isinstance(v, Variant):
                if v.name in out and out[v.name] != v:
                    raise ValueError(f"variant {v.name!r} given twice with different settings")
                out[v.name] = v
    return out


def environments(variants: Mapping[str, Variant]) -> tuple[Settings, ...]:
    """The environments one world size's jobs run in: the default (no settings) first, then each
    distinct ``env`` of ``variants`` in order of appearance (variants sharing one share a job)."""
    out: list[Settings] = [()]
    for v in variants.values():
        if v.settings not in out:
            out.append(v.settings)
    return tuple(out)


def runs_in(name: str, settings: Settings, variants: Mapping[str, Variant]) -> bool:
    """Whether algorithm ``name`` runs in the job of ``settings``."""
    v = variants.get(name)
    return v.settings == settings if v is not None else settings == ()


def job_environments(environ: Mapping[str, str],
                     variants: Mapping[str, Variant]) -> tuple[Settings, ...]:
    """The environments this job's cases belong to: the one its self-launcher named
    (``COMMBENCH_JOB_ENV``), else (the user's mpiexec or srun) the default and each whose
    settings are all in ``environ``."""
    index = environ.get(JOB_ENV)
    envs = environments(variants)
    if index is not None and re.fullmatch(r"\d+", index) and int(index) < len(envs):
        return (envs[int(index)],)
    return tuple(s for s in envs if all(environ.get(k) == v for k, v in s))
