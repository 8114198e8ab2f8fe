"""Gradient rules of the nn family (see grads.py for the rule signature)."""

from __future__ import annotations
