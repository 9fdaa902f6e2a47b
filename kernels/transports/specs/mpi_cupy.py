from kernels.transports import TransportSpec, register
from kernels.transports.gpu_plan import DEVICE_DTYPES

register(TransportSpec("mpi-cupy", "kernels.transports.mpi_cupy", "from_mpi",
                       "mpi4py on CuPy buffers (CUDA-aware, or pinned staging)",
                       "mpi", DEVICE_DTYPES, device=True, order=50))
