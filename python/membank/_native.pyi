"""Type stub of the native module (crates/membank-python/src/lib.rs)."""

from pathlib import Path
from typing import List, Optional, Tuple

class NativeError(Exception):
    """``args == (code, message)``: a failure outside a REST answer."""

class Engine:
    """membank's engine over one database, answering REST requests in this process."""

    def __init__(self, args: List[str]) -> None: ...
    @property
    def location(self) -> str: ...
    @property
    def closed(self) -> bool: ...
    def request(
        self, method: str, path: str, body: Optional[bytes] = None, sink: Optional[str] = None
    ) -> Tuple[int, bytes]: ...
    def close(self) -> None: ...

def fetch_model(model: str, dir: Optional[str] = None) -> Path:
    """Fetch a known model into ``dir`` (default: its default directory); returns the directory."""
