"""Shell text perfpost sends to hosts, shared by the cells' scripts and the clusters'."""

from __future__ import annotations

import base64
import shlex


def write_file_line(path: str, text: str) -> str:
    """One line of sh that writes ``text`` to ``path``; the text travels as base64, so no
    character of it is ever read by the shell."""
    data = base64.b64encode(text.encode()).decode()
    return f"printf %s {data} | base64 -d > {shlex.quote(path)}"


def write_files_script(files: dict[str, str], private: bool = True) -> str:
    """Write ``files`` (path -> text) on the host, directories made (:func:`write_file_line`).
    ``private`` files (a cell's client configuration) are readable by their owner only."""
    lines = ["set -e", *(["umask 077"] if private else [])]
    for path, text in files.items():
        lines.append(f'mkdir -p -- "$(dirname -- {shlex.quote(path)})"')
        lines.append(write_file_line(path, text))
    return "\n".join(lines) + "\n"
