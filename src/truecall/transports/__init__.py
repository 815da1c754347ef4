"""Transports: thin adapters between bytes and the engine."""
