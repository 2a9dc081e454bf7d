"""Jobs that run in the server's event loop: HTTP(S) downloads and Whisper model downloads
(their bodies are read in threads; they need no child process)."""
