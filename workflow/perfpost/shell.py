"""Shell text perfpost sends to hosts, shared by the cells' scripts and the clusters'."""

from __future__ import annotations

import base64
import shlex


def write_files_script(files: dict[str, str], private: bool = True) -> str:
    """Write ``files`` (path -> text) on the host, directories made; the text travels as
    base64, so no character of it is ever read by the shell. ``private`` files (a cell's
    client configuration) are readable by their owner only."""
    lines = ["set -e", *(["umask 077"] if private else [])]
    for path, text in files.items():
        q = shlex.quote(path)
        data = base64.b64encode(text.encode()).decode()
        lines.append(f'mkdir -p -- "$(dirname -- {q})"')
        lines.append(f"printf %s {data} | base64 -d > {q}")
    return "\n".join(lines) + "\n"
