"""Matplotlib figures as inline SVG: no files beside the report, no reference to another host.

Figures are built on :class:`matplotlib.figure.Figure` directly (no pyplot, so no global figure
state); rc settings are scoped with ``rc_context``. Text stays text (``svg.fonttype: none``),
which keeps a figure to tens of kilobytes and its labels searchable.
"""

from __future__ import annotations

import contextlib
import io
import re

import matplotlib
from markupsafe import Markup
from matplotlib.figure import Figure

RC = {"svg.fonttype": "none", "svg.hashsalt": "commbench", "font.size": 9,
      "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False}
NO_METADATA = {"Creator": None, "Date": None, "Format": None, "Type": None}
_PROLOG = re.compile(r"^.*?(?=<svg)", re.S)
_NS = re.compile(r'\s+xmlns(:\w+)?="[^"]*"')
_SIZE = re.compile(r'<svg([^>]*?)\swidth="([\d.]+)pt"\s+height="([\d.]+)pt"')


def style() -> contextlib.AbstractContextManager[None]:
    """The report's matplotlib settings; build and save every figure inside it."""
    return matplotlib.rc_context(RC)


def to_svg(fig: Figure, alt: str) -> Markup:
    """``fig`` as an inline ``<svg>`` element (XML prolog and namespace URLs removed: an SVG
    inside HTML needs neither), scaled to the page width."""
    buf = io.StringIO()
    with matplotlib.rc_context(RC):
        fig.savefig(buf, format="svg", metadata=NO_METADATA)
    svg = _NS.sub("", _PROLOG.sub("", buf.getvalue(), count=1))
    svg = _SIZE.sub(lambda m: f'<svg{m.group(1)} role="img" class="fig" '
                              f'style="max-width:{m.group(2)}pt"', svg, count=1)
    title = str(Markup.escape(alt))
    svg = svg.replace(">", f"><title>{title}</title>", 1)
    return Markup(svg)
