"""alltoall algorithms (discovered; no list to edit)."""
