"""The figures' axes: x ticks at the measured sizes (every k-th past MAX_TICKS), a log y axis at
least 2x tall (an imported run's 29.7-30.3 µs must not fill a panel), legends widened to hold
their longest label whole."""

from __future__ import annotations

import math

from matplotlib.figure import Figure

from reports import figures


def test_x_ticks_are_the_measured_sizes() -> None:
    ax = Figure().subplots()
    sizes = [8 * 8**i for i in range(7)]
    ax.plot(sizes, [1.0] * len(sizes))
    figures.size_panel(ax, "t", "y", logy=False, sizes=sizes)
    assert list(ax.xaxis.get_majorticklocs()) == sizes
    many = [2**i for i in range(3, 25)]  # 22 sizes: every third
    figures.size_panel(ax, "t", "y", logy=False, sizes=many)
    assert list(ax.xaxis.get_majorticklocs()) == many[::3]


def test_a_narrow_log_axis_is_widened_to_2x_about_its_middle() -> None:
    ax = Figure().subplots()
    ax.plot([8, 64], [29.7, 30.3])
    figures.size_panel(ax, "t", "y", logy=True, sizes=[8, 64])
    lo, hi = ax.get_ylim()
    assert math.isclose(math.log10(hi / lo), figures.MIN_DECADES)
    assert math.isclose(math.sqrt(lo * hi), math.sqrt(29.7 * 30.3), rel_tol=0.02)


def test_a_long_legend_label_widens_the_figure_not_the_axes() -> None:
    fig, axes = figures._panels(1, 1)
    label = "native [20261206-031500-a-very-long-run-directory-name]"
    axes[0].plot([1, 2], [1, 2], label=label)
    width, axes_in = fig.get_figwidth(), axes[0].get_position().width * fig.get_figwidth()
    figures._finish(fig, "t")
    assert fig.get_figwidth() * (1 - fig.subplotpars.right) >= figures.CHAR_IN * len(label)
    assert fig.get_figwidth() > width
    assert math.isclose(axes[0].get_position().width * fig.get_figwidth(), axes_in, rel_tol=1e-6)
