"""reduce_scatter algorithms (discovered; no list to edit)."""
