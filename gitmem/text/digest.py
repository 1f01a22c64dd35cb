"""blake2b for cache keys and signatures without loading OpenSSL.

``hashlib`` loads its OpenSSL binding when imported (about 3 ms, more than a prompt hook's whole search), although
its ``blake2b`` is the built-in ``_blake2`` module's in every CPython: that module is imported alone here, so the
digests are the same bytes either way.
"""

from __future__ import annotations

try:
    from _blake2 import blake2b
except ImportError:  # an interpreter built without it
    from hashlib import blake2b

__all__ = ["blake2b"]
