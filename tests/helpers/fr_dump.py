"""Regenerates tests/data/replay/fr/: flight-recorder dumps written by torch's own code path
(``_dump_fr_trace``, pickle; ``_dump_fr_trace_json``) from a gloo job on CPU.

    TORCH_FR_BUFFER_SIZE=100 .venv/bin/python -m torch.distributed.run --nproc-per-node 2 \\
        tests/helpers/fr_dump.py tests/data/replay/fr

Calls: all_reduce (world), all_gather_into_tensor, reduce_scatter_tensor (gloo records it as
the all_reduce it runs), broadcast and a float64 all_reduce on a second group of the same ranks.
"""

import sys
from pathlib import Path

import torch
import torch._C._distributed_c10d as c10d
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
sub = dist.new_group([0, 1])
x = torch.ones(1024)
dist.all_reduce(x)
dist.all_gather_into_tensor(torch.empty(2048), x)
dist.reduce_scatter_tensor(torch.empty(512), x)
dist.broadcast(x, 0, group=sub)
dist.all_reduce(torch.ones(3, dtype=torch.float64), group=sub)
out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
(out / f"nccl_trace_rank_{rank}").write_bytes(c10d._dump_fr_trace())
(out / f"nccl_trace_rank_{rank}.json").write_bytes(c10d._dump_fr_trace_json())
dist.barrier()
dist.destroy_process_group()
