"""The registry's file policy: no links, no secret-bearing file, no private key material anywhere.

Spec: lboel/acx@85f1358 SPEC.md §4.4 (private keys MUST NEVER be git-tracked), §17.6 item 2 (no
symbolic-link escapes, no unsafe file types), §17.6 item 8; the reference's
``registryPolicyIssues``; docs/spec/acx-registry.md §6. Every file of the registry folder is
read (bounded) and checked, not only the canonical artifacts.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from engram.registry._problems import Problem, problem, problem_order

SECRET_NAME = re.compile(
    r"(?:^|/)\.env(?:\.|$)|\.key\.pem$|(?:^|/)id_(?:rsa|dsa|ecdsa|ed25519)$|(?:private|secret)[^/]*\.pem$",
    re.IGNORECASE,
)
PRIVATE_KEY_MARKERS = (
    b"-----BEGIN PRIVATE KEY-----",
    b"-----BEGIN ENCRYPTED PRIVATE KEY-----",
    b"-----BEGIN RSA PRIVATE KEY-----",
    b"-----BEGIN EC PRIVATE KEY-----",
    b"-----BEGIN OPENSSH PRIVATE KEY-----",
)
RULE = "registry.no-secrets"
_BLOCK = 1 << 20


def _holds_private_key(path: Path) -> bool:
    tail = b""
    with path.open("rb") as handle:
        while block := handle.read(_BLOCK):
            window = tail + block
            if any(marker in window for marker in PRIVATE_KEY_MARKERS):
                return True
            tail = window[-64:]
    return False


def policy_problems(root: Path) -> list[Problem]:
    """Every file-policy finding under ``root``, sorted."""
    problems: list[Problem] = []
    if root.is_symlink():
        return [
            problem(".", "registry.site-paths", "the registry folder must not be a symbolic link")
        ]
    for folder, dirs, files in os.walk(root, followlinks=False):
        base = Path(folder)
        for name in sorted(dirs):
            path = base / name
            if path.is_symlink():
                problems.append(
                    problem(
                        path.relative_to(root).as_posix(),
                        "registry.site-paths",
                        "symbolic links are forbidden in the registry",
                    )
                )
        dirs[:] = sorted(d for d in dirs if not (base / d).is_symlink() and d != ".git")
        for name in sorted(files):
            path = base / name
            relative = path.relative_to(root).as_posix()
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                problems.append(
                    problem(
                        relative,
                        "registry.site-paths",
                        "symbolic links are forbidden in the registry",
                    )
                )
                continue
            if not stat.S_ISREG(info.st_mode):
                problems.append(
                    problem(
                        relative, "registry.site-paths", "only regular files belong in the registry"
                    )
                )
                continue
            if SECRET_NAME.search(relative):
                problems.append(problem(relative, RULE, "a secret-bearing file name is forbidden"))
            if _holds_private_key(path):
                problems.append(problem(relative, RULE, "private key material is forbidden"))
    return sorted(set(problems), key=problem_order)


__all__ = ["PRIVATE_KEY_MARKERS", "SECRET_NAME", "policy_problems"]
