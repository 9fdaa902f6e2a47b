"""Every CuPy / NCCL / CUDA-runtime API the GPU code names exists in the installed CuPy and is
called with arguments its signature accepts. CPU only: the files are read with :mod:`ast`, never
run, so a typo or an API CuPy does not have fails here rather than on a GPU machine's first run.

How names reach CuPy objects in those files is declared below (``ROOTS`` and ``TYPED``). Calls are
checked against ``inspect.signature`` or, for Cython functions, the signature line CuPy embeds in
the docstring. ``cupy.cuda.nccl`` needs libnccl to import; where it cannot load (CI) its names and
signatures are read from the strings its compiled module embeds, which Cython writes for every
function, method and module-level name.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import inspect
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kernels.transports.gpu_plan import CUPY_UFUNCS
from kernels.transports.nccl import NCCL_DTYPES, NCCL_OPS
from tests.conftest import ROOT

cupy = pytest.importorskip("cupy", reason="CuPy is not installed: nothing to check the GPU code against")
cupyx = pytest.importorskip("cupyx")

FILES = ["kernels/transports/gpu.py", "kernels/transports/nccl.py", "kernels/transports/mpi_cupy.py",
         "kernels/transports/cuda_ipc.py", "bench/commands/env.py", "tests/kernels/test_gpu_device.py"]
SCRIPTS = ["scripts/gpu-check.sh"]  # its Python heredocs that import cupy

# Names, and attributes of anything (``self._nccl``, ``ctx.cp``), that stand for a module.
ROOTS = {"cp": "cupy", "cupy": "cupy", "cupyx": "cupyx", "nccl": "nccl", "rt": "runtime"}
ROOT_ATTRS = {"cp": "cupy", "_cp": "cupy", "_nccl": "nccl", "_rt": "runtime"}
# Names and attributes that hold a CuPy object, per class of the file ("*": anywhere).
TYPED: dict[str, dict[str, str]] = {
    "*": {"stream": "cuda.Stream", "_stream": "cuda.Stream", "_start": "cuda.Event",
          "_stop": "cuda.Event", "start": "cuda.Event", "stop": "cuda.Event",
          "_graph": "cuda.Graph", "pool": "cuda.MemoryPool", "mem": "cuda.Memory",
          "buf": "ndarray", "_buf": "ndarray", "scratch": "ndarray", "arr": "ndarray",
          "nccl_comm": "nccl:NcclCommunicator"},
    "PinnedMirrors": {"dev": "ndarray"},
    "NcclPlan": {"comm": "nccl:NcclCommunicator", "_comm": "nccl:NcclCommunicator"},
}
# What a property (or, with "()", a method) returns, where the code goes on from it.
RETURNS = {("ndarray", "data"): "cuda.MemoryPointer", ("Stream", "end_capture()"): "cuda.Graph"}


# --- the installed API: live objects, or the strings of the nccl extension -------------------

@dataclass
class Sig:
    params: list[str]  # positional-or-keyword, in order (no self)
    required: int
    kwonly: list[str]
    varargs: bool
    varkw: bool


_PARAM = re.compile(r"^(?:[\w.]+\s+)*?(\*{0,2}\w+|\*|/)\s*(?:=.*)?$")


def parse_sig(text: str, bound: bool) -> Sig | None:
    """``name(a, int b, c=1, *, d=None)`` as CuPy's docstrings write it."""
    m = re.match(r"^\s*[\w.]+\((.*)\)", text.replace("\\*", "*"))
    if m is None:
        return None
    params, kwonly, required, varargs, varkw, kw = [], [], 0, False, False, False
    for raw in (p.strip() for p in m.group(1).split(",")):
        pm = _PARAM.match(raw)
        if not raw or raw == "/" or pm is None:
            continue
        name = pm.group(1)
        if name == "*":
            kw = True
        elif name.startswith("**"):
            varkw = True
        elif name.startswith("*"):
            varargs, kw = True, True
        elif kw:
            kwonly.append(name)
        else:
            params.append(name)
            required += "=" not in raw
    if bound and params and params[0] == "self":
        params, required = params[1:], required - 1
    return Sig(params, required, kwonly, varargs, varkw)


def live_sig(obj: Any, bound: bool) -> Sig | None:
    target = obj
    if inspect.isclass(obj):
        bound = True
        target = obj.__init__ if "__init__" in vars(obj) else obj
    try:
        s = inspect.signature(target)
    except (TypeError, ValueError):
        for doc in (target.__doc__, obj.__doc__):
            line = (doc or "").strip().splitlines()[:1]
            sig = parse_sig(line[0], bound) if line else None
            if sig is not None and not (sig.varargs and sig.varkw and not sig.params):
                return sig
        return None
    ps = list(s.parameters.values())
    if bound and ps and ps[0].name == "self":
        ps = ps[1:]
    pos = [p for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return Sig([p.name for p in pos], sum(p.default is p.empty for p in pos),
               [p.name for p in ps if p.kind == p.KEYWORD_ONLY],
               any(p.kind == p.VAR_POSITIONAL for p in ps), any(p.kind == p.VAR_KEYWORD for p in ps))


class Api:
    """One resolved object: ``obj`` live, or ``nccl_name`` looked up in the nccl extension's
    strings ("" = the module); ``instance`` when it stands for an instance of class ``obj`` (or of
    ``nccl_name``); ``owner``: the class name a method was reached through."""

    def __init__(self, obj: Any = None, instance: bool = False, nccl_name: str | None = None,
                 owner: str | None = None, name: str = "") -> None:
        self.obj, self.instance, self.nccl_name = obj, instance, nccl_name
        self.owner, self.name = owner, name

    def attr(self, name: str) -> Api | None:
        """The attribute, or None when the installed CuPy has no such thing."""
        if self.nccl_name is not None:
            return _nccl_attr(self, name)
        cls = self.obj if self.instance else None
        if not hasattr(self.obj, name):
            if cls is not None and _documented(cls, name):
                return Opaque()  # an instance attribute its class documents (Stream.ptr)
            return None
        value = getattr(self.obj, name)
        if cls is None:
            return Api(value)
        if callable(value) and not inspect.isclass(value):
            return Api(value, owner=cls.__name__, name=name)
        ret = RETURNS.get((cls.__name__, name))
        return Api(resolve_type(ret), instance=True) if ret else Opaque()

    def sig(self) -> Sig | None:
        if self.nccl_name:
            m = re.search(r"(?m)^" + re.escape(self.nccl_name) + r"\(.*\)$", nccl_text())
            return parse_sig(m.group(0), bound=True) if m else None
        if inspect.ismodule(self.obj) or self.obj is None:
            return None
        return live_sig(self.obj, self.owner is not None)

    def called(self) -> Api | None:
        """What calling it gives, where known: an instance of a class, or RETURNS."""
        if self.nccl_name and "." not in self.nccl_name and self.nccl_name[:1].isupper():
            return Api(nccl_name=self.nccl_name + ".", instance=True)
        if inspect.isclass(self.obj):
            return Api(self.obj, instance=True)
        ret = RETURNS.get((self.owner or "", self.name + "()"))
        return Api(resolve_type(ret), instance=True) if ret else None


class Opaque(Api):
    """A value whose type the check does not follow (a dtype, a documented instance field)."""

    def attr(self, name: str) -> Api | None:
        return self

    def sig(self) -> Sig | None:
        return None

    def called(self) -> Api | None:
        return None


def _documented(cls: type, name: str) -> bool:
    return any(f"~{c.__name__}.{name}" in (c.__doc__ or "") for c in cls.__mro__)


def _nccl_attr(api: Api, name: str) -> Api | None:
    text, base = nccl_text(), api.nccl_name or ""
    if api.instance:  # a method of NcclCommunicator: "NcclCommunicator.send(self, ...)"
        qual = base + name
        return Api(nccl_name=qual) if qual + "(" in text else None
    if re.search(r"(?m)^" + re.escape(name) + r"(\(|$)", text) is None:
        return None
    return Api(nccl_name=name)


@functools.cache
def nccl_text() -> str:
    spec = importlib.util.find_spec("cupy_backends.cuda.libs.nccl")
    assert spec is not None and spec.origin, "CuPy without its nccl extension module"
    # One line per printable run, as `strings` shows them: names, signature lines, docstrings.
    return re.sub(rb"[^\x20-\x7e]+", b"\n", Path(spec.origin).read_bytes()).decode("ascii")


def nccl_root() -> Api:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from cupy.cuda import nccl
    return Api(nccl) if getattr(nccl, "available", False) else Api(nccl_name="")


def resolve_type(spec: str) -> Any:
    """``"cuda.Stream"`` -> cupy.cuda.Stream; ``"nccl:NcclCommunicator"`` stays by name."""
    obj: Any = cupy
    for part in spec.split("."):
        obj = getattr(obj, part)
    return obj


def typed(spec: str) -> Api:
    if spec.startswith("nccl:"):
        root = nccl_root()
        cls = root.attr(spec[5:])
        assert cls is not None, f"cupy.cuda.nccl has no {spec[5:]}"
        return cls.called() or Opaque()
    return Api(resolve_type(spec), instance=True)


def module(name: str) -> Api:
    return {"cupy": lambda: Api(cupy), "cupyx": lambda: Api(cupyx), "nccl": nccl_root,
            "runtime": lambda: Api(cupy.cuda.runtime)}[name]()


# --- the code: attribute chains and calls -----------------------------------------------------

class Checker(ast.NodeVisitor):
    def __init__(self, where: str) -> None:
        self.where, self.cls = where, "*"
        self.errors: list[str] = []
        self.used: set[str] = set()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        outer, self.cls = self.cls, node.name
        self.generic_visit(node)
        self.cls = outer

    def _named(self, name: str) -> Api | None:
        spec = TYPED.get(self.cls, {}).get(name) or TYPED["*"].get(name)
        return typed(spec) if spec else None

    def resolve(self, node: ast.expr) -> tuple[Api | None, str]:
        if isinstance(node, ast.Name):
            if node.id in ROOTS:
                return module(ROOTS[node.id]), node.id
            return self._named(node.id), node.id
        if isinstance(node, ast.Attribute):
            base, text = self.resolve(node.value)
            text = f"{text}.{node.attr}"
            if base is None:
                if node.attr in ROOT_ATTRS:
                    return module(ROOT_ATTRS[node.attr]), text
                return self._named(node.attr), text
            found = base.attr(node.attr)
            if found is None:
                self.errors.append(f"{self.where}:{node.lineno}: {text}: no such attribute")
                return None, text
            self.used.add(text)
            return found, text
        if isinstance(node, ast.Call):
            fn, text = self.resolve(node.func)
            if fn is None:
                return None, text + "()"
            self._check_call(node, fn, text)
            return fn.called(), text + "()"
        return None, type(node).__name__

    def _check_call(self, node: ast.Call, fn: Api, text: str) -> None:
        sig = fn.sig()
        if sig is None or any(isinstance(a, ast.Starred) for a in node.args) or \
                any(k.arg is None for k in node.keywords):
            return
        n, at = len(node.args), f"{self.where}:{node.lineno}: {text}"
        if n > len(sig.params) and not sig.varargs:
            self.errors.append(f"{at}: {n} positional arguments, it takes {len(sig.params)}")
        names = [k.arg for k in node.keywords]
        for k in names:
            if k not in sig.params[n:] + sig.kwonly and not sig.varkw:
                self.errors.append(f"{at}: no keyword {k!r} (takes {sig.params + sig.kwonly})")
        given = set(sig.params[:n]) | set(names)
        missing = [p for p in sig.params[:sig.required] if p not in given]
        if missing:
            self.errors.append(f"{at}: missing {missing}")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.resolve(node)  # the whole chain; inner nodes are visited for their calls only
        self._visit_inner(node.value)

    def visit_Call(self, node: ast.Call) -> None:
        self.resolve(node)
        self._visit_inner(node.func)
        for a in [*node.args, *(k.value for k in node.keywords)]:
            self.visit(a)

    def _visit_inner(self, node: ast.expr) -> None:
        while isinstance(node, (ast.Attribute, ast.Call)):
            if isinstance(node, ast.Call):
                for a in [*node.args, *(k.value for k in node.keywords)]:
                    self.visit(a)
                node = node.func
            else:
                node = node.value
        self.visit(node)


def sources() -> list[tuple[str, str]]:
    out = [(f, (ROOT / f).read_text()) for f in FILES]
    for script in SCRIPTS:
        text = (ROOT / script).read_text()
        for i, m in enumerate(re.finditer(r"<<'PYEOF'[^\n]*\n(.*?)\nPYEOF", text, re.S)):
            if "cupy" in m.group(1):
                out.append((f"{script}#heredoc{i}", m.group(1)))
    return out


def check(where: str, text: str) -> Checker:
    c = Checker(where)
    c.visit(ast.parse(text))
    return c


def test_every_cupy_name_the_gpu_code_uses_exists_and_is_called_as_declared() -> None:
    errors: list[str] = []
    used: set[str] = set()
    for where, text in sources():
        c = check(where, text)
        errors += c.errors
        used |= c.used
    assert not errors, "\n".join(errors)
    # The walk reached the APIs that matter (a ROOTS/TYPED mismatch would silently check less).
    for name in ("cp.cuda.runtime.memGetInfo", "self._rt.ipcOpenMemHandle", "stream.begin_capture",
                 "self._graph.launch", "comm.send", "nccl.groupStart", "self.nccl_comm.destroy",
                 "rt.memcpyAsync", "buf.data.ptr", "self._buf.get", "cupyx.empty_pinned"):
        assert name in used, f"{name} was not checked"


def test_names_picked_at_run_time_exist() -> None:
    for op, ufunc in CUPY_UFUNCS.items():
        assert isinstance(getattr(cupy, ufunc), cupy.ufunc), op
    nccl = nccl_root()
    for const in [*NCCL_DTYPES.values(), *NCCL_OPS.values(), "NCCL_INT8"]:
        assert nccl.attr(const) is not None, const


@pytest.mark.parametrize("code,error", [
    ("cp.cuda.runtime.memGetInf()", "no such attribute"),
    ("cp.cuda.runtime.memcpyAsync(1, 2, 3, cp.cuda.runtime.memcpyDefault)", "missing ['stream']"),
    ("stream.begin_capture(); stream.end_capture().launch(strm=s)", "no keyword 'strm'"),
    ("buf.set(host, stream=s, blocking=False)", "no keyword 'blocking'"),
    ("nccl.NCCL_FLOAT33", "no such attribute"),
    ("nccl.NcclCommunicator(2, uid, 0).sendd(1, 2, 3, 4, 5)", "no such attribute"),
    ("nccl.NcclCommunicator(2, uid, 0).send(1, 2, 3, 4)", "missing ['stream']"),
    ("cp.cuda.Event(timing=False)", "no keyword 'timing'"),
])
def test_the_check_fails_on_a_wrong_name_or_call(code: str, error: str) -> None:
    errors = check("snippet", code).errors
    assert errors and error in errors[0], errors
