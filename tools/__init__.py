"""Developer tools: not shipped in the wheel (import graph, conformance reports, coverage)."""
