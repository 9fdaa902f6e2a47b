"""One self-contained HTML report (CSS, script and figures inline; templates autoescaped) of one
or more run directories."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import jinja2

from bench.units import format_size
from reports.data import ReportData, load_runs
from reports.sections import SECTIONS, Options, Section
from reports.svg import collect, draw_all

TEMPLATES = Path(__file__).parent / "templates"


def _num(value: object, digits: int = 3) -> str:
    """Numbers for tables: ``digits`` significant figures, blank when missing."""
    if value is None or isinstance(value, str):
        return "" if value is None else value
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(v):
        return ""
    if v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return f"{v:.{digits}g}" if abs(v) < 1e6 else f"{v:.3e}"


def _sortval(value: object) -> str:
    """A ``data-v`` sort key: the number itself, or '' when missing."""
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return ""
    return repr(v) if math.isfinite(v) else ""


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters.update(num=_num, sortval=_sortval,
                       size=lambda n: format_size(int(n)) if n == n and n else "")
    return env


def render_html(data: ReportData, opts: Options | None = None, extra: Sequence[Section] = (),
                title: str | None = None) -> str:
    """The page as a string; ``extra`` sections (e.g. the gate's verdict) go first."""
    built = (SECTIONS.get(name).build(data, opts or Options()) for name in SECTIONS.names())
    sections = [*extra, *(sec for sec in built if sec is not None)]
    draw_all(collect([s.ctx for s in sections]))
    failed = data.failed()
    over = data.frame["oversubscribed"].astype(bool)
    env = environment()
    bodies = [env.from_string(s.source) if s.source else "sections/" + s.template for s in sections]
    return env.get_template("report.html.j2").render(
        title=title or "commbench report — " + ", ".join(data.labels),
        runs=data.runs, sections=sections, bodies=bodies, n_records=len(data.frame),
        n_failed=len(failed), n_oversubscribed=int(over.sum()))


def render_report(run_dirs: Sequence[Path | str], out: Path | str, opts: Options | None = None,
                  extra: Sequence[Section] = (), title: str | None = None) -> Path:
    """Write the report of ``run_dirs`` to ``out``; raises ``StoreError`` for unusable runs."""
    html = render_html(load_runs(run_dirs), opts, extra, title)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(out)
    return out


def render_run(run_dir: Path) -> str:
    """``run_dir/report.html`` for one run; returns its path (what ``commbench run`` prints)."""
    return str(render_report([run_dir], Path(run_dir) / "report.html"))
