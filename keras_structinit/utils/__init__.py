"""Helpers that know no model: argument checks, files and folders, sizes a file declares,
reports, plots, the command line's named choices (internal)."""
