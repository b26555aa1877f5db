"""Where each host looks for skills (SPEC §5.1), in a module of its own that imports nothing.

``engram cartridge load`` offers these hosts as its ``--host`` choices, so its ``--help`` reads
this table; keeping it apart from :mod:`engram.cartridge._host` (activation, verification,
signing) means the help loads neither the signing path nor cryptography (issue 28).
"""

from __future__ import annotations

HOST_SKILL_DIRS = {
    "claude": "~/.claude/skills",
    "codex": "~/.codex/skills",
    "cursor": ".cursor/skills",
}

__all__ = ["HOST_SKILL_DIRS"]
