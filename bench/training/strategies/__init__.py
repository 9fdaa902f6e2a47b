"""The strategies, one file each (``fsdp`` holds the ZeRO-2/3 pair), found by
:func:`bench.training.strategy.strategies`: a new file here is the whole change."""
