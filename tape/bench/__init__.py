"""tape-bench: the command (cli.py) and the workloads, engines and references behind it."""
