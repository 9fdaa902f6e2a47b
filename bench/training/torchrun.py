"""torch's launcher as the self-launcher starts it: ``python -m bench.training.torchrun ARGS``
is ``python -m torch.distributed.run ARGS`` without the report torch adds when a rank fails
(a ``ChildFailedError`` traceback and its agent's log lines for every rank): the rank has said
why in one line, and the self-launcher says which case failed and what it does next. The exit
code is torchrun's: 0, or 1 when a rank failed. Anything else torchrun raises (a rendezvous that
cannot start, a signal) is left to it."""

from __future__ import annotations

import logging
import sys

# the agent's per-rank lines on a failure ("failed (exitcode: 1) local_rank: 0 ...", "Sending
# process N closing signal SIGTERM"): said once, by the self-launcher
QUIET = ("torch.distributed.elastic.multiprocessing.api",)


def main(argv: list[str] | None = None) -> int:
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import parse_args, run

    for name in QUIET:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        run(parse_args(sys.argv[1:] if argv is None else argv))
    except ChildFailedError:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
