from kernels.transports import TransportSpec, register

register(TransportSpec("torch", "kernels.transports.torch_p2p", "from_mpi",
                       "torch.distributed batch_isend_irecv (gloo on CPU, NCCL on GPU)", "torch",
                       order=20))
