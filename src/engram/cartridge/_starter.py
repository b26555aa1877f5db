"""``engram cartridge new``: an agent package folder to start from, the input
``engram cartridge export`` reads (docs/spec/acx.md §12 "Starting one").

The package is the smallest one that exports to a clean cartridge: ``manifest.json`` (the name,
id, version, licence and role), one agentskills skill under ``skills/``, an ``IDENTITY.md``, and
a ``README.md`` that says what each file is for, what else a package may hold and the commands
that follow. JSON has no comments, so the explanations live in the README and in the skill.
"""

from __future__ import annotations

import re
from pathlib import Path

from engram.core.jsonio import dumps_text
from engram.errors import InvalidRequest

_NOT_SLUG = re.compile(r"[^a-z0-9]+")


def slug_of(name: str) -> str:
    """``My Agent`` -> ``my-agent``: the lowercase-hyphenated id the manifest needs."""
    return _NOT_SLUG.sub("-", name.lower()).strip("-")[:64].strip("-") or "my-agent"


def starter_package(name: str = "My Agent") -> dict[str, bytes]:
    """The package's files, by path relative to its folder."""
    artifact = slug_of(name)
    skill = f"{artifact}-basics"[:64].strip("-")
    manifest = {
        "name": name,
        "artifactId": artifact,
        "artifactVersion": "0.1.0",
        "description": f"{name}: say in one sentence what this agent is good at.",
        "license": "Apache-2.0",
        "authors": ["Your Name"],
        "role": "engineering",
        "tags": ["starter"],
        "techStack": ["python"],
    }
    skill_md = f"""---
name: {skill}
description: What this skill does and when an agent should use it (one or two sentences; the
  host shows this to decide whether to load the skill).
license: Apache-2.0
metadata:
  version: 0.1.0
---

# {name}: basics

Write the instructions the agent follows when this skill applies: the steps, the checks, what
"done" looks like. Put longer material beside this file in `references/`, helper scripts in
`scripts/` and other files in `assets/` (nothing else may sit in a skill folder).
"""
    identity = f"""# {name}

- Role: engineering
- What it is for: one paragraph a person reads before choosing this agent.
"""
    readme = f"""# {name}: an agent package (engram cartridge new)

This folder is what `engram cartridge export` turns into a signed cartridge (`.acx`).

- `manifest.json`: `name`, `artifactId` (lowercase-hyphenated), `artifactVersion` (SemVer),
  `description`, `license` (SPDX), `authors`, `role`, `tags`, `techStack`. Change them to yours.
- `skills/{skill}/SKILL.md`: one skill in the agentskills format (frontmatter `name` equal to
  the folder name, and a `description`); add a folder per skill.
- `IDENTITY.md`: who the agent is. Other knowledge files it may carry: `SKILLS.md`,
  `MEMORY.md`, `CAREER.md`, `EQUIPMENT.md`, `LEARNING_PATH.md`, `EXCHANGE.md`, `STYLE.md`.
- Optional: `memory-records.json` (portable memories), `harness-requirements.json` (the tools
  and context window the agent needs; a default is written when absent),
  `loop-context-policy.json`, `capabilities.json`.

Next:

    engram cartridge keygen -o ~/.engram/publisher.pem
    engram cartridge export . -o {artifact}.acx --publisher io.github.you \\
        --sign-key ~/.engram/publisher.pem
    engram cartridge verify {artifact}.acx
    engram cartridge spec {artifact}.acx
    engram cartridge check {artifact}.acx --all-tools
"""
    return {
        "manifest.json": (dumps_text(manifest, indent=2) + "\n").encode(),
        f"skills/{skill}/SKILL.md": skill_md.encode(),
        "IDENTITY.md": identity.encode(),
        "README.md": readme.encode(),
    }


def write_starter_package(folder: Path, name: str = "My Agent") -> list[Path]:
    """Write the starter into ``folder`` (absent or empty); the paths written, in order."""
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise InvalidRequest(f"{folder} exists and is not an empty folder: nothing was written")
    written = []
    for relative, content in starter_package(name).items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        written.append(path)
    return written


__all__ = ["slug_of", "starter_package", "write_starter_package"]
