"""The kernel's version, defined once: the face re-exports it as `dpmem_ref.__version__` and
`dpmem --version` falls back to it when run from a checkout (pyproject.toml states the same)."""

__version__ = "0.1.0"
