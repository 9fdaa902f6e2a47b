"""broadcast algorithms (discovered; no list to edit)."""
