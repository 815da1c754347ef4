"""Apps the stress commands serve (built on the public truecall API only)."""
