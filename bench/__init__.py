"""engram benchmarks: ``python -m bench <name>`` (see bench/README.md)."""
