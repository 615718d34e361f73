"""Workloads, engines and references behind tape-bench."""
