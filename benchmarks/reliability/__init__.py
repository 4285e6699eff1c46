"""The reliability and security suite (issue 13): faults survived, bad inputs tried,
nothing lost. ``python -m benchmarks.reliability`` runs every check and writes
``benchmarks/results/reliability.json``; tests/reliability/ runs the same checks shortened."""
