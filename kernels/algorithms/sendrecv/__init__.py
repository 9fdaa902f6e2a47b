"""sendrecv algorithms (discovered; no list to edit)."""
