from kernels.transports import TransportSpec, register

register(TransportSpec("mpi", "kernels.transports.mpi", "MpiTransport",
                       "mpi4py point-to-point on host (numpy) buffers", "mpi",
                       options=("hugepages",), order=10))
