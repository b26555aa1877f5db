"""Memory records (``acx.memory-record.v1``): tiers, fingerprints, the export boundary, merge.

Spec: lboel/acx@85f1358 SPEC.md §7.1-§7.4, §7.6 and §12 items 8 and 10; the published
``memory-partition.schema.json``; docs/spec/acx.md §8.

- §7.1: ``portable: true`` (TRANSFERABLE, ROM zone) has ``codebaseFingerprint`` and ``repoId``
  null; ``portable: false`` (FIELD-LEARNED, SAVE zone) has a ``cbf1_`` fingerprint. Any other
  combination is refused at import.
- §7.2: ``codebaseFingerprint = "cbf1_" + HMAC-SHA-256(installationSalt, canonicalRepoIdentity)``,
  first 40 hex; the salt is at least 256 bits and never exported.
- §7.3: ``artifactFingerprint`` = the first 10 hex of SHA-1 over the RFC 8785 bytes of
  ``{title, summary, sourceType, repoId, projectLabel, timestamp, impact, xpAwarded, tags}``
  (text trimmed and lowercased, tags lowercased and sorted) - the reading the reference's
  published records reproduce; ``portable`` and ``codebaseFingerprint`` are left out, so the
  address is tier-independent. Merge dedupes by ``id``, then by that fingerprint within one
  tier and codebase; conflicts resolve deterministically (longer text, worse impact, max
  ``xpAwarded``, union of tags, latest ``timestamp``), so merging is commutative and idempotent.
- §7.4: export strips a transferable record (``repoId`` null, labels ``portable-core``) and
  namespaces a field-learned one (``repoId`` null, labels ``field-learned``, ``foreign: true``).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from engram.cartridge._schemas import issues
from engram.core.canonical import Json, JsonObject, canonicalize_row
from engram.errors import CartridgeFormatError

SCHEMA = "memory-partition"
PORTABLE_LABEL = "portable-core"
FIELD_LABEL = "field-learned"
_CBF = re.compile(r"cbf1_[0-9a-f]{40}")
_IMPACT_RANK = {"negative": 3, "neutral": 2, "positive": 1}
MIN_SALT_BYTES = 32


def array(value: Json) -> list[Json]:
    """A list member of a record, or an empty one (the record schema makes it a list)."""
    return list(value) if isinstance(value, list) else []


def _number(value: Json) -> int | float:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else 0


_FINGERPRINT_MEMBERS = (
    "title",
    "summary",
    "sourceType",
    "repoId",
    "projectLabel",
    "timestamp",
    "impact",
    "xpAwarded",
    "tags",
)


def artifact_fingerprint(record: Mapping[str, Json]) -> str:
    """The 10-hex content address of §7.3 (tier-independent).

    Its RFC 8785 bytes come from ``canonicalize_row``, which writes a record of strings, nulls,
    a safe integer and a list of strings without building and walking the object (the generic
    walk was a third of import's record check, issue 33) and canonicalises any other."""
    get = record.get
    row = (
        str(get("title") or "").strip().lower(),
        str(get("summary") or "").strip().lower(),
        str(get("sourceType") or "").strip().lower(),
        get("repoId"),
        str(get("projectLabel") or "").strip().lower(),
        get("timestamp") or "",
        get("impact") or "neutral",
        get("xpAwarded") or 0,
        list[Json](sorted(str(t).lower() for t in array(get("tags")))),
    )
    data = canonicalize_row(_FINGERPRINT_MEMBERS, row)
    return hashlib.sha1(data, usedforsecurity=False).hexdigest()[:10]


def canonical_repo_identity(origin_url: str | None = None, root_commit: str | None = None) -> str:
    """§7.2: ``host/path`` of a git origin, lowercased, without scheme, credentials, default
    port or ``.git``; else ``commit:<root commit sha>``."""
    if origin_url:
        url = origin_url.strip().lower()
        url = re.sub(r"^[a-z0-9.+-]+://", "", url)
        url = re.sub(r"^[^/@]+@", "", url)
        host, slash, path = url.partition("/")
        name, colon, rest = host.partition(":")
        if colon and rest.isdigit():
            host = name if rest in ("22", "80", "443") else host
        elif colon:  # scp form host:owner/repo
            host, path, slash = name, rest + slash + path, "/"
        url = re.sub(r"\.git$", "", (host + slash + path).rstrip("/"))
        return url.rstrip("/")
    if root_commit:
        return "commit:" + root_commit.strip().lower()
    raise CartridgeFormatError("a repository identity needs an origin URL or a root commit")


def codebase_fingerprint(installation_salt: bytes, repo_identity: str) -> str:
    """§7.2: ``cbf1_`` + the first 40 hex of HMAC-SHA-256(salt, identity)."""
    if len(installation_salt) < MIN_SALT_BYTES:
        raise CartridgeFormatError("installationSalt must be at least 256 bits (32 bytes)")
    digest = hmac.new(installation_salt, repo_identity.encode("utf-8"), hashlib.sha256)
    return "cbf1_" + digest.hexdigest()[:40]


def tier_problems(record: Mapping[str, Json], where: str) -> list[str]:
    """The §7.1 tier rules (the schema does not state the repoId rule)."""
    portable = record.get("portable")
    if not isinstance(portable, bool):
        return [f"{where}: portable must be a boolean"]
    cbf = record.get("codebaseFingerprint")
    if portable and (cbf is not None or record.get("repoId") is not None):
        return [f"{where}: malformed tier: portable=true needs codebaseFingerprint and repoId null"]
    if not portable and not (isinstance(cbf, str) and _CBF.fullmatch(cbf)):
        return [f"{where}: malformed tier: portable=false needs a cbf1_ codebaseFingerprint"]
    zone = "rom" if portable else "save"
    if record.get("zone") != zone:
        return [f"{where}: zone must be {zone!r} for portable={str(portable).lower()}"]
    return []


def record_problems(record: Mapping[str, Json], where: str) -> list[str]:
    """Everything wrong with one stored record: schema, tier, fingerprint."""
    found = issues(SCHEMA, dict(record), where) + tier_problems(record, where)
    if not found and record.get("artifactFingerprint") != artifact_fingerprint(record):
        found.append(f"{where}: artifactFingerprint is not the §7.3 hash of its content")
    return found


def validate_record(record: Mapping[str, Json], where: str = "memory record") -> JsonObject:
    problems = record_problems(record, where)
    if problems:
        raise CartridgeFormatError("; ".join(problems[:5]))
    return dict(record)


def export_record(
    record: Mapping[str, Json],
    *,
    codebase: str | None = None,
) -> JsonObject:
    """§7.4: the cartridge form of an author's record.

    A record with a ``repoId`` (or ``portable: false``) is field-learned and needs ``codebase``,
    its ``cbf1_`` fingerprint; everything else is transferable. Unknown members of the v1 shape
    are refused (the schema is closed); derived members are computed, never taken on trust.
    """
    field_learned = record.get("portable") is False or record.get("repoId") not in (None, "")
    out: JsonObject = {
        "id": record.get("id"),
        "title": record.get("title") or "",
        "summary": record.get("summary") or "",
        "sourceType": record.get("sourceType") or "knowledge",
        "markdownPath": record.get("markdownPath") or f"knowledge/{record.get('id')}.md",
        "timestamp": record.get("timestamp") or "1970-01-01T00:00:00.000Z",
        "impact": record.get("impact") or "neutral",
        "xpAwarded": record.get("xpAwarded") or 0,
        "tags": array(record.get("tags")),
        "origin": record.get("origin") or "native",
        "repoId": None,
    }
    if field_learned:
        if codebase is None:
            raise CartridgeFormatError(
                f"memory {record.get('id')!r} is field-learned: its codebase fingerprint is needed"
            )
        out |= {"portable": False, "codebaseFingerprint": codebase, "foreign": True}
        out["repoLabel"] = out["projectLabel"] = FIELD_LABEL
        out["zone"] = "save"
    else:
        out |= {"portable": True, "codebaseFingerprint": None}
        out["repoLabel"] = out["projectLabel"] = PORTABLE_LABEL
        out["zone"] = "rom"
    out["artifactFingerprint"] = artifact_fingerprint(out)
    # The fingerprint was computed just above, so only the schema and the tier are checked.
    where = f"memory record {record.get('id')!r}"
    problems = issues(SCHEMA, out, where) + tier_problems(out, where)
    if problems:
        raise CartridgeFormatError("; ".join(problems[:5]))
    return out


def repo_literals(records: Iterable[Mapping[str, Json]]) -> list[str]:
    """The raw repository identifiers that must not survive export (§7.5)."""
    found: list[str] = []
    for r in records:
        repo = r.get("repoId")
        if isinstance(repo, str) and repo.strip():
            found.append(repo)
        for label in (r.get("repoLabel"), r.get("projectLabel")):
            text = str(label or "")
            slug_shaped = not re.search(r"\s", text) and re.search(r"[-_0-9]", text)
            if len(text) >= 4 and slug_shaped and text not in (PORTABLE_LABEL, FIELD_LABEL):
                found.append(text)
    return sorted(set(found))


@dataclass(frozen=True)
class MergeResult:
    records: tuple[JsonObject, ...]
    """The merged set, first-seen order."""
    added: tuple[str, ...]
    by_id: tuple[str, ...]
    by_fingerprint: tuple[str, ...]


def merge_key(record: Mapping[str, Json]) -> tuple[str, bool, str]:
    """§7.3's second merge key: (artifact fingerprint, tier, codebase)."""
    return (
        str(record.get("artifactFingerprint") or artifact_fingerprint(record)),
        bool(record.get("portable")),
        str(record.get("codebaseFingerprint") or ""),
    )


def resolve_conflict(a: Mapping[str, Json], b: Mapping[str, Json]) -> JsonObject:
    """§7.3's deterministic, order-independent survivor of two records that are one.

    A record met again unchanged is kept as it is, so merging twice gives what merging once did.
    """
    if a == b:
        return dict(a)
    if a.get("portable") != b.get("portable") or a.get("codebaseFingerprint") != b.get(
        "codebaseFingerprint"
    ):
        raise CartridgeFormatError(
            f"refusing to merge {a.get('id')!r} and {b.get('id')!r} across the tier/codebase "
            "boundary"
        )
    x, y = (a, b) if str(a.get("id")) <= str(b.get("id")) else (b, a)

    def longer(key: str) -> Json:
        s1, s2 = str(x.get(key) or ""), str(y.get(key) or "")
        if len(s1) != len(s2):
            return x.get(key) if len(s1) > len(s2) else y.get(key)
        return x.get(key) if s1 <= s2 else y.get(key)

    ia, ib = str(a.get("impact") or "neutral"), str(b.get("impact") or "neutral")
    impact = ia if _IMPACT_RANK.get(ia, 2) >= _IMPACT_RANK.get(ib, 2) else ib
    ta, tb = str(a.get("timestamp") or ""), str(b.get("timestamp") or "")
    return {
        **x,
        "title": longer("title"),
        "summary": longer("summary"),
        "impact": impact,
        "xpAwarded": max(_number(a.get("xpAwarded")), _number(b.get("xpAwarded"))),
        "tags": list[Json](sorted({str(t) for t in array(a.get("tags")) + array(b.get("tags"))})),
        "timestamp": ta if ta >= tb else tb,
    }


def merge_records(
    existing: Iterable[Mapping[str, Json]], incoming: Iterable[Mapping[str, Json]]
) -> MergeResult:
    """§7.3 two-key merge: by ``id``, then by (fingerprint, tier, codebase); idempotent."""
    by_id: dict[str, JsonObject] = {}
    by_key: dict[tuple[str, bool, str], str] = {}
    added: list[str] = []
    dup_id: list[str] = []
    dup_fp: list[str] = []

    def upsert(record: Mapping[str, Json], new: bool) -> None:
        rid, key = str(record["id"]), merge_key(record)
        if rid in by_id:
            target = rid
            if new:
                dup_id.append(rid)
        elif key in by_key:
            target = by_key[key]
            if new:
                dup_fp.append(rid)
        else:
            by_id[rid] = dict(record)
            by_key[key] = rid
            if new:
                added.append(rid)
            return
        by_id[target] = resolve_conflict(by_id[target], record)

    for record in existing:
        upsert(record, new=False)
    for record in incoming:
        upsert(record, new=True)
    return MergeResult(tuple(by_id.values()), tuple(added), tuple(dup_id), tuple(dup_fp))


__all__ = [
    "FIELD_LABEL",
    "PORTABLE_LABEL",
    "MergeResult",
    "artifact_fingerprint",
    "canonical_repo_identity",
    "codebase_fingerprint",
    "export_record",
    "merge_key",
    "merge_records",
    "record_problems",
    "repo_literals",
    "resolve_conflict",
    "tier_problems",
    "validate_record",
]
