"""NCCL's tuning constants, restated from its default tuner table (NVIDIA/nccl
``src/graph/tuning.cc``, ``ncclTunerConstantsDefaults`` and the tables beside it; line numbers of
the revision read are in docs/predict.md, "NCCL's own model"). Latencies in microseconds,
bandwidths in GB/s (1e9 B/s), per channel where the name says so. Indexed by NCCL's names so a
reader can hold each table against the source."""

from __future__ import annotations

ALGORITHMS = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT")
PROTOCOLS = ("LL", "LL128", "Simple")
GENERATIONS = ("volta", "ampere", "hopper", "blackwell")  # NCCL's compute-capability index

# baseLatencies[algorithm][protocol]
BASE = {"Tree": (6.8, 14.0, 8.4), "Ring": (6.6, 14.0, 8.4), "CollNetDirect": (0, 0, 0),
        "CollNetChain": (0, 0, 0), "NVLS": (0, 0, 0), "NVLSTree": (0, 0, 0),
        "PAT": (8.0, 8.0, 8.0)}
# hwLatencies[hw][algorithm][protocol]: one hop over NVLink, PCIe, or the network
HW = {
    "nvlink": {"Tree": (0.6, 1.25, 4.0), "Ring": (0.6, 1.9, 3.4), "CollNetDirect": (0, 0, 3.7),
               "CollNetChain": (0, 0, 2.8), "NVLS": (0, 0, 25.0), "NVLSTree": (0, 0, 25.0),
               "PAT": (0, 0, 4.0)},
    "pci": {"Tree": (1.0, 1.9, 4.0), "Ring": (1.0, 2.5, 5.7), "CollNetDirect": (0, 0, 3.7),
            "CollNetChain": (0, 0, 2.8), "NVLS": (0, 0, 0), "NVLSTree": (0, 0, 0),
            "PAT": (0, 0, 4.0)},
    "net": {"Tree": (5.0, 8.5, 14.0), "Ring": (2.7, 4.0, 14.0), "CollNetDirect": (0, 0, 31.0),
            "CollNetChain": (0, 0, 30.0), "NVLS": (0, 0, 18.0), "NVLSTree": (0, 0, 20.9),
            "PAT": (0, 0, 14.0)},
}
# llMaxBws[row][nodes index: 1, 2, >2 nodes]; one node: the GPU generation's row, several
# nodes: the CPU's (row 0 Intel, row 1 AMD)
LL_MAX = {"volta": (39.0, 39.0, 20.4), "ampere": (87.7, 22.5, 19.0),
          "hopper": (141.0, 45.0, 35.0), "blackwell": (282.0, 90.0, 70.0)}
LL_MAX_CPU = {"intel": LL_MAX["volta"], "amd": LL_MAX["ampere"]}
PER_CH_RING_LL128 = {"volta": (20.0, 20.0, 20.0), "ampere": (20.0, 20.0, 20.0),
                     "hopper": (36.7, 36.7, 36.7), "blackwell": (40.0, 40.0, 40.0)}
PER_CH_TREE_LL128 = {"volta": (20.0, 20.0, 20.0), "ampere": (20.0, 20.0, 20.0),
                     "hopper": (36.7, 36.7, 29.0), "blackwell": (55.6, 31.67, 20.0)}
PER_CH_TREE = {"volta": (26.5, 18.5, 10.0), "ampere": (24.0, 23.6, 17.8),
               "hopper": (38.7, 41.4, 36.0), "blackwell": (70.0, 42.8, 24.0)}
PER_CH_NVLS_TREE = {"volta": (26.5, 18.5, 10.0), "ampere": (24.0, 23.6, 17.8),
                    "hopper": (0.0, 57.7, 45.5), "blackwell": (0.0, 96.0, 80.0)}
NVLS_EFFICIENCY = {"volta": 0.0, "ampere": 0.0, "hopper": 0.85, "blackwell": 0.74}

# treeCorrectionFactor[protocol][log2(bytes / 64)], powers of two from 64 B to 256 MiB
TREE_CORRECTION = {
    "LL": (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9,
           1.0, 1.0, 1.0, 1.0, 1.0),
    "LL128": (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9,
              .9, .9, 1.0, 1.0, 1.0),
    "Simple": (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7,
               .8, .9, .9, .9),
}
RING_PLATEAU = {"volta": 1.9, "newer": 1.4}  # Simple ring latency across nodes, large sizes

# Threads and work per thread before another channel is used (src/include/device.h, comm.h)
MAX_THREADS = {"LL": 512, "LL128": 640, "Simple": 512}
THREAD_THRESHOLD = {"LL": 8, "LL128": 8, "Simple": 64}  # bytes per thread; Ring LL: x nRanks
NVLS_CHANNELS = {"hopper": 16, "blackwell": 24, "blackwell_nodes": 32}
MAX_NVLS_ARITY = 32
NET_OVERHEAD = {"intel": 1.0, "amd": 2.0, "arm": 1.0}  # us per network post
