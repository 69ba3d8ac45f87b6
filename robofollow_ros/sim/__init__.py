"""The MuJoCo dual-arm cell: model composition, action executor, cameras, reset, scripted expert."""
