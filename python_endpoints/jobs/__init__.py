"""The jobs that task endpoints run. A job module may run in a child process: it imports the
standard library, :mod:`python_endpoints.serving.child`, and what its work needs (PyAV,
imageio-ffmpeg) — never pydantic, websockets, psutil or the rest of Fredica, an import-linter
contract (see :mod:`python_endpoints.serving.registry` for the endpoints that wrap them)."""
