"""The endpoints server: websockets server, task endpoint bases, the child's side of a job,
process trees, output locks, the policy a token holder cannot change, log files.

Nothing is imported here: a job's child imports :mod:`python_endpoints.serving.child` and must
not pull the server in with it.
"""
