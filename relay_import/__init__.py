"""The front door: load / convert / compile / verify / export models."""
