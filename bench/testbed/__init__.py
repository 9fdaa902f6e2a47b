"""A cluster of hosts on one machine, to rehearse a bring-up and to test multi-host paths for real.

Each host is a network and UTS namespace of its own (its hostname, its address, its loopback), all
joined by a bridge that lives in a namespace of its own too, so no address is added outside the
namespaces the testbed made. Each host's link is paced by the kernel (``tc`` tbf, per direction).
MPI between hosts goes over TCP; Hydra reaches the hosts through the testbed's launcher script.
Root only. ``commbench testbed up|down|status|exec|mpiexec``; see docs/testbed.md.
"""
