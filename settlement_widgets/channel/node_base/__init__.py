"""What both versions' local nodes are built on (the v0.5 relay, the v1 Nitronode).

Modules: ``sqlite`` (the ledger's WAL connection), ``committer`` (group commit: nothing is
acknowledged before its COMMIT) and ``process`` (a node in a child process that can be
SIGKILLed and restarted on the same database and port).
"""
