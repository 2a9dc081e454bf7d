"""The jobs that task endpoints run. A job module may run in a child process: it imports the
standard library and :mod:`python_endpoints.child` only (see :mod:`python_endpoints.registry`
for the endpoints that wrap them)."""
