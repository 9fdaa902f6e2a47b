"""all_gather algorithms (discovered; no list to edit)."""
