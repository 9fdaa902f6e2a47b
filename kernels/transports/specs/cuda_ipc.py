from kernels.transports import TransportSpec, register
from kernels.transports.gpu_plan import DEVICE_DTYPES

register(TransportSpec("cuda-ipc", "kernels.transports.cuda_ipc", "from_mpi",
                       "device-to-device pulls through CUDA IPC handles, one node",
                       "mpi", DEVICE_DTYPES, device=True, order=60, scope="one node"))
