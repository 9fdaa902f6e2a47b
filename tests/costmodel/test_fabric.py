"""The fabric block of a profile: presets load, contradicting fabrics and topologies are one
line with exit 2 through the CLI, the MPI eager/rendezvous switch prices messages exactly."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from bench.cli import main
from bench.costmodel.fabric import Fabric
from bench.costmodel.model import parse_topology
from bench.costmodel.net import Net
from bench.costmodel.profile import Link, Mpi, Profile, ProfileError, load_profile, presets
from kernels.algorithm import Problem, get_algorithm
from tests.helpers import costref as cost

GPU = ("h100-ib400", "h200-ib400", "p5en-h200-efa", "b200-ib400", "a100-ib200", "l40s-pcie-8gpu")
BASE = """name: f
links:
  intra: {alpha_s: 1.0e-6, beta_bytes_per_s: 4.5e+11}
  inter: {alpha_s: 2.0e-6, beta_bytes_per_s: 5.0e+10}
nics_per_node: 8
fabric:
"""
GOOD = "  devices: 8\n  switch: nvswitch\n"


def test_presets_carry_their_fabric() -> None:
    assert set(GPU) <= set(presets())
    for name in GPU:
        f = load_profile(name).fabric
        assert isinstance(f, Fabric) and f.devices == 8 and "not measured" in load_profile(
            name).source
    h = load_profile("h100-ib400").fabric
    assert h is not None and (h.nics, h.rails, h.network, h.nvls) == (8, 8, "rail", 3.04e11)
    assert h.nic_achievable == pytest.approx(47e9) and h.ring_intra(8) == pytest.approx(
        0.8124 * 4.5e11)
    p5 = load_profile("p5en-h200-efa").fabric
    assert p5 is not None and p5.nics == 16 and p5.node_net(8) == pytest.approx(16 * 23.5e9)
    assert p5.node_net(1) == pytest.approx(2 * 23.5e9)  # a GPU's own two NICs
    pcie = load_profile("l40s-pcie-8gpu").fabric
    assert pcie is not None and pcie.nvls is None
    assert pcie.ring_intra(2) == pytest.approx(3.15e10) and pcie.ring_intra(8) == pytest.approx(
        3.15e10)  # the uplinks and UPI carry one ring flow each way: the port is the bound
    assert pcie.node_net(4) == pytest.approx(25e9) and pcie.node_net(8) == pytest.approx(50e9)
    for name in ("cpu-25gbe", "emulated-slow", "pcie-100gbe"):
        assert load_profile(name).fabric is None


def test_a_fabric_round_trips_through_as_yaml(tmp_path: Path) -> None:
    import yaml

    prof = load_profile("p5en-h200-efa")
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(prof.as_yaml()))
    assert load_profile(path).fabric == prof.fabric


@pytest.mark.parametrize(("fabric", "says"), [
    (GOOD + "  network: {kind: rail, rails: 16}\n", "16 rails need at least 16 NICs per node"),
    ("  devices: 8\n  switch: pcie\n  nvls: {bytes_per_s: 1.0e+11}\n",
     "nvls (in-switch reduction) needs switch: nvswitch"),
    (GOOD + "  nics: {count: 4}\n", "fabric.nics.count 4 contradicts nics_per_node 8"),
    ("  devices: 6\n  switch: nvswitch\n", "6 devices and 8 NICs: rail affinity"),
    (GOOD + "  nvls: {bytes_per_s: 9.0e+11}\n", "exceeds the device port"),
    (GOOD + "  devices_per_switch: 2\n", "devices_per_switch describes a PCIe tree"),
    ("  devices: 8\n  switch: pcie\n  devices_per_switch: 3\n", "do not split evenly over PCIe"),
    ("  devices: 8\n  switch: infinity\n", "fabric.switch: Input should be 'nvswitch' or 'pcie'"),
    (GOOD + "  ring_efficiency: 1.5\n",
     "fabric.ring_efficiency: Input should be less than or equal to 1"),
    (GOOD + "  rails: 8\n", "fabric.rails: unknown key (did you mean trays?)"),
    (GOOD + "  nics: {count: 8, bytes_per_sec: 1.0e+10}\n",
     "fabric.nics.bytes_per_sec: unknown key (did you mean bytes_per_s?)"),
    (GOOD + "  nics: {bytes_per_s: -5.0e+10}\n",
     "fabric.nics.bytes_per_s: Input should be greater than 0"),
    (GOOD + "  channels: many\n", "fabric.channels: Input should be a valid integer"),
    (GOOD + "  channels: true\n", "fabric.channels: Input should be a valid integer"),
])
def test_a_contradicting_fabric_is_one_line_exit_2(tmp_path: Path, capsys, fabric: str,
                                                   says: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(BASE + fabric)
    with pytest.raises(ProfileError, match="fabric"):
        load_profile(path)
    assert main(["predict", "--profile", str(path), "--topology", "2x8", "--sizes", "1MiB",
                 "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err and str(path) in err
    assert err.startswith("commbench: predict:")


def test_a_topology_with_fewer_nics_than_rails_is_exit_2(tmp_path: Path, capsys) -> None:
    assert main(["predict", "--profile", "h100-ib400", "--topology", "2x8:nics=4",
                 "--sizes", "1MiB", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("commbench: predict: topology '2x8:nics=4': nics=4 is fewer than the "
                   "fabric's 8 rails")


PROF = Profile("t", "", "test", {"intra": Link(1e-6, 1e9), "inter": Link(5e-6, 1e8)})


def test_mpi_eager_rendezvous_switch_prices_each_message() -> None:
    # ring all_reduce 1x4, n = 4000 float32: 6 steps of one 4000 B message per rank.
    # Without the switch: 6 x (1 us + 4 us). Eager limit 1000 B: each message pays the
    # 20 us rendezvous; limit 8000 B: each pays 4000 B x 1 ns of eager copy.
    net = Net(parse_topology("1x4").place(4), PROF)
    pr = Problem(net.placed.topology, 4000, 4, "all_reduce", 0)
    ring = get_algorithm("all_reduce", "ring")
    from bench.costmodel.evaluate import schedule_estimate

    assert schedule_estimate(ring, pr, net).time_s == pytest.approx(30e-6)
    rdv = Net(net.placed, replace(PROF, mpi=Mpi(1000, 20e-6, 1e-9)))
    assert schedule_estimate(ring, pr, rdv).time_s == pytest.approx(30e-6 + 6 * 20e-6)
    eager = Net(net.placed, replace(PROF, mpi=Mpi(8000, 20e-6, 1e-9)))
    assert schedule_estimate(ring, pr, eager).time_s == pytest.approx(30e-6 + 6 * 4e-6)
    assert cost.evaluate(ring.schedules(pr), net, 4).time_s == pytest.approx(30e-6)


def test_mpi_block_is_validated(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(BASE.replace("fabric:\n", "mpi: {rendezvous_s: 1.0e-5}\n"))
    with pytest.raises(ProfileError, match=r"mpi\.eager_limit_bytes: Field required"):
        load_profile(path)
    path.write_text(BASE.replace("fabric:\n", "mpi: {eager_limit_bytes: 65536}\n"))
    assert load_profile(path).mpi == Mpi(65536.0)


def test_closed_forms_decline_a_profile_with_the_mpi_switch() -> None:
    from bench.costmodel.predict import plan_case

    net = Net(parse_topology("512x8").place(4096), replace(load_profile("h100-ib400"),
                                                           mpi=Mpi(65536, 1e-5)))
    why = plan_case(get_algorithm("all_reduce", "ring"),
                    Problem(net.placed.topology, 1 << 22, 4, "all_reduce", 0), net)
    assert isinstance(why, str) and "MPI protocol switch" in why and "p = 256" in why


def test_nvl72_domains_group_trays_and_count_bytes_per_link() -> None:
    """GB200 NVL72: 36 trays of 4 in domains of 18 are 2 nodes of 72 for the model; a ring
    all_reduce in node order crosses between domains twice per ring, 2(p-1)/p x n bytes per
    rank in all, of which only the domain's two boundary ranks send across."""
    from kernels.algorithm import Problem as Pr
    from kernels.bytecount import bytes_sent

    c = parse_topology("36x4:domain=18")
    pl = c.place(c.world)
    assert (c.world, pl.node_sizes, pl.num_nodes) == (144, (72, 72), 2)
    assert pl.node_of[:72] == (0,) * 72 and pl.node_of[72:] == (1,) * 72
    assert pl.describe() == "2x72 (block, NVLink domains of 18 trays)"
    assert parse_topology("36x4:domain=18:nics=4").place(144).nics_per_node == 72
    assert parse_topology("36x4:domain=18").place(1440).node_sizes == (72,) * 20
    n = 144 * 1024  # elements
    alg = get_algorithm("all_reduce", "ring")
    scheds = alg.schedules(Pr(pl.topology, n, 4, "all_reduce", 0))
    got = [bytes_sent(s, pl.topology, 4) for s in scheds]
    assert {b.total for b in got} == {2 * 143 * 1024 * 4}
    crossing = sorted(r for r, b in enumerate(got) if b.inter)
    assert crossing == [71, 143] and {got[r].inter for r in crossing} == {2 * 143 * 1024 * 4}
    net = Net(pl, load_profile("gb200-nvl72"))
    assert net.nics == 72 and net.cls(0, 71) == 0 and net.cls(71, 72) == 1


@pytest.mark.parametrize(("spec", "why"), [
    ("35x4:domain=18", "domain=18 needs equal trays, a whole number of domains (35 trays)"),
    ("36x4:domain=0", "domain must be >= 1 tray"),
])
def test_bad_domains_are_one_line(spec: str, why: str) -> None:
    from bench.costmodel.model import TopologyError

    with pytest.raises(TopologyError, match=None) as e:
        parse_topology(spec)
    assert str(e.value) == f"topology {spec!r}: {why}"
