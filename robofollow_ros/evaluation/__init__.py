"""In-process evaluation: episodes (protocol §1.6), trial plans, resumable results files, progress."""
