"""Task endpoints: a websockets server running Fredica's heavy jobs (see docs/protocol.md).

Deliberately empty: a job's child process imports this package, and must start fast.
"""
