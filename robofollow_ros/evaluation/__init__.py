"""Evaluation: episodes over an environment protocol, guarded policy calls, run identity and lock, trial
plans, crash-safe recording, resumable results files and ``run.json``, progress."""
