"""A cluster of hosts on one machine, each a network and UTS namespace, to rehearse a bring-up and
test multi-host paths (docs/testbed.md). Root only."""
