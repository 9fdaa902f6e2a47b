"""Run under mpiexec (CPU): MPI_Allreduce of bfloat16 bits with commbench's user-defined op, the
staged baseline of mpi-cupy / cuda-ipc. Rank 0 prints the wrong elements per op as JSON."""

from __future__ import annotations

import json

import numpy as np
from mpi4py import MPI

from bench.measure import data
from kernels.collective import resolve
from kernels.transports.gpu_plan import bf16_bits_to_f32, f32_to_bf16_bits
from kernels.transports.mpi_cupy import bf16_mpi_op


def main() -> None:
    comm = MPI.COMM_WORLD
    wrong = {}
    for op in ("sum", "prod", "max", "min"):
        bits = f32_to_bf16_bits(data.fill(comm.rank, comm.size, 1001, op).astype(np.float32))
        mpi_op = bf16_mpi_op(op)
        comm.Allreduce(MPI.IN_PLACE, [bits, MPI.UINT16_T], mpi_op)
        mpi_op.Free()
        bad = data.count_wrong_output(bf16_bits_to_f32(bits), resolve("all_reduce"), 1001,
                                      comm.size, comm.rank, 0, op, "bfloat16")
        wrong[op] = comm.allreduce(bad, op=MPI.SUM)
    if comm.rank == 0:
        print(json.dumps(wrong))


if __name__ == "__main__":
    main()
