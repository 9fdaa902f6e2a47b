"""``commbench calibrate RUN... -o profile.yaml``: fit a profile to measured runs."""

from __future__ import annotations

import argparse
import sys

from bench.argtypes import in_path, out_file
from bench.commands import register


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", type=in_path, nargs="+", help="measured run directories")
    p.add_argument("-o", "--output", type=out_file, required=True, help="profile YAML to write")
    p.add_argument("--base", default=None,
                   help="profile (preset or file) for what the runs cannot tell: link classes "
                        "they never crossed, device figures")
    p.add_argument("--name", default=None, help="the profile's name (default: the file's stem)")
    p.add_argument("--fabric", action="store_true",
                   help="fit the --base profile's fabric (ring and NIC efficiencies) on the runs' "
                        "vendor all_reduce curves (native records: commbench runs or imported "
                        "nccl-tests logs) instead of alpha-beta; predict then extrapolates it")
    p.add_argument("--no-mpi-switch", action="store_true",
                   help="fit no MPI eager/rendezvous switch from the probe's ping-pong sizes: "
                        "alpha-beta only, and a base's switch dropped")


def handle(args: argparse.Namespace) -> int:
    from bench.costmodel.calibrate_cli import calibrate_command

    return calibrate_command(args, lambda line: print(line, file=sys.stderr))


register("calibrate", "fit a cost-model profile (alpha, beta, gamma, o, hot sends, MPI switch) "
         "to measured runs", configure, handle, example="{measured} --output profile.yaml",
         offline=True)
