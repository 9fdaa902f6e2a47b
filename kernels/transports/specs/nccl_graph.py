from kernels.transports import TransportSpec, register
from kernels.transports.gpu_plan import DEVICE_DTYPES

register(TransportSpec("nccl-graph", "kernels.transports.nccl", "graph_from_mpi",
                       "as nccl, each plan captured once as a CUDA graph (-G)",
                       "nccl", DEVICE_DTYPES, device=True, order=40, needs_nccl=True))
