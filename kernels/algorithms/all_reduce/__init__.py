"""all_reduce algorithms (discovered; no list to edit)."""
