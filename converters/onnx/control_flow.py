"""Control flow: If as a Relay If; Loop and Scan as recursive functions."""

from __future__ import annotations
