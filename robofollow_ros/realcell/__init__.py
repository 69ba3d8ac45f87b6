"""The real cell (or fake hardware behind a robot profile): the bridge's real-time mode, everything that moves the
arms after the safety layer, the drivers' topics, the fake driver, and the evaluator's operator side."""
