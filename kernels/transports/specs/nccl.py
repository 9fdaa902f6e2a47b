from kernels.transports import TransportSpec, register
from kernels.transports.gpu_plan import DEVICE_DTYPES

register(TransportSpec("nccl", "kernels.transports.nccl", "from_mpi",
                       "CuPy + NCCL send/recv in group calls, one rank per GPU",
                       "nccl", DEVICE_DTYPES, device=True, order=30, needs_nccl=True))
