"""Serving a policy over the network: the openpi websocket wire and the robotwin-tcp JSON wire."""
