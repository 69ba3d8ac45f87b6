"""Policies: one interface (reset, set_instruction, predict) and its backends."""
