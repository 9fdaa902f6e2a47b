"""Process control: which MPI, self-launch, signals, the watchdog, the in-flight marker,
shared-memory clean-up, the thread level."""
