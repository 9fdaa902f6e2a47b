"""The results store: records, meta.json, run directories and resume, export, importers."""
