"""Tile and wave quantization (bench/advise/tiles.py): exact tile and wave counts and the tile
chosen for fixed shapes on the A100 preset's 108 SMs; a GEMM's time from them."""

from __future__ import annotations

import math

import pytest

from bench.advise.tiles import Tiles, parse_tiles

A100 = Tiles(108, parse_tiles("256x128,128x256,128x128,256x64,64x256,128x64,64x128,64x64"), 37.1)


def test_tile_and_wave_counts() -> None:
    # BLOOM-176B's QKV at TP 4 (3 x 14336 / 4 = 10752 columns), one 2048-token sequence
    assert Tiles.count(2048, 10752, 256, 128) == 8 * 84 == 672
    assert A100.waves(672) == 7  # 672 / 108 = 6.2: the seventh wave is a fifth full
    assert Tiles.count(2048, 3584, 128, 128) == 16 * 28 == 448 and A100.waves(448) == 5
    # tile quantization: one row more than 16 tiles of 128 costs a 17th row of tiles
    assert Tiles.count(2049, 128, 128, 128) == 17
    assert Tiles.count(64, 64, 128, 128, batch=96) == 96  # a batched call: tiles per GEMM x batch
    assert A100.waves(108) == 1 and A100.waves(109) == 2


def test_tile_rate_by_operand_reuse() -> None:
    assert A100.rate(256, 128) == 1.0 and A100.rate(128, 64) == 1.0  # reuse 85.3 and 42.7
    assert A100.rate(64, 64) == pytest.approx(32 / 37.1)
    assert Tiles(108, ((64, 64),)).rate(64, 64) == 1.0  # no reuse stated: every tile full rate


def test_seconds_on_the_fastest_tile() -> None:
    sm = 1e12  # FLOP/s per SM
    m, n, k = 2048, 3584, 14336
    # 128x256: 16 x 14 = 224 tiles, 3 waves (2.07); 128x64: 16 x 56 = 896 tiles, 9 waves (8.3)
    assert A100.waves(Tiles.count(m, n, 128, 64)) == 9 and A100.waves(Tiles.count(m, n, 128, 256)) == 3
    want = min(A100.waves(Tiles.count(m, n, r, c)) * 2.0 * r * c * k / (sm * A100.rate(r, c))
               for r, c in A100.shapes)
    assert A100.seconds(m, n, k, 1, sm) == want
    assert A100.tile_of(m, n, k) == (128, 64)  # the first of the two 896-tile shapes
    assert want == 9 * 2.0 * 64 * 128 * k / sm
    # a shape that fills whole waves of the largest tile loses nothing to quantization
    full = Tiles(4, ((256, 128),))
    assert full.seconds(512, 256, 1024, 1, sm) == pytest.approx(2.0 * 512 * 256 * 1024 / (4 * sm))


def test_bad_tiles_refused() -> None:
    with pytest.raises(ValueError, match=r"device\.gemm_tiles"):
        parse_tiles("256x128,big")
    with pytest.raises(ValueError, match="sm_count"):
        Tiles(0, ((128, 128),))


def test_a100_preset_prices_gemms_by_tiles() -> None:
    from bench.advise.achieved import Gemm
    from bench.advise.question import device_compute
    from bench.costmodel.profile import load_profile

    eff = device_compute(load_profile("a100-ib200")).eff  # type: ignore[union-attr]
    assert eff.tiles is not None and eff.tiles.sms == 108
    g = Gemm(2048, 3584, 14336)
    t = eff.tiles.seconds(g.m, g.n, g.k, 1, eff.gemm * eff.peak / 108)
    assert math.isclose(eff.gemm_time(g), max(t, eff.memory_s(g.nbytes("flash"))) + eff.latency)
    assert eff.efficiency(g) < eff.gemm  # 8.3 waves run as 9
