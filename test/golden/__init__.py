"""Hand-written scenes and tasks for the referee's golden tests."""
