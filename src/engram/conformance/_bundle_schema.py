"""The JSON Schema of an engram certification bundle (docs/spec/conformance-bundle.md).

Modelled on OpenWOP v2 Conformance §"Bundle v3": a closed root, REQUIRED suite, host, discovery,
results, witnessSha256, assertionCount (>= 1), detail.nonPass[] and signature.
"""

from __future__ import annotations

from engram.core.canonical import JsonObject

_HEX64: JsonObject = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
_TEXT: JsonObject = {"type": "string", "minLength": 1}
_RESULT: JsonObject = {"enum": ["executed-pass", "executed-fail", "skipped", "blocked"]}
SIGNED = ("witnessSha256", "host.build", "suite.version", "discovery.sha256")
SUITE_NAME = "engram-conformance"
UNSIGNED = ("host.name", "host.version", "discovery.url")
"""Members neither signed nor re-derived by the verifier: shown as carried, never trusted."""
_B64URL: JsonObject = {"type": "string", "pattern": "^[A-Za-z0-9_-]+$"}


def _closed(required: list[str], properties: JsonObject) -> JsonObject:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": [*required],
        "properties": properties,
    }


BUNDLE_SCHEMA: JsonObject = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "engram certification bundle",
    **_closed(
        [
            "bundleVersion",
            "suite",
            "host",
            "discovery",
            "claim",
            "results",
            "witnessSha256",
            "assertionCount",
            "detail",
            "signature",
        ],
        {
            "bundleVersion": {"const": "engram-1"},
            # name and specVersion are fixed for this bundle version, so checked here; version
            # is signed (suite.version in the attestation).
            "suite": _closed(
                ["name", "version", "specVersion"],
                {"name": {"const": SUITE_NAME}, "version": _TEXT, "specVersion": {"const": "0.1"}},
            ),
            "host": _closed(
                ["name", "version", "build"],
                {
                    "name": _TEXT,
                    "version": _TEXT,
                    "build": _closed(
                        ["kind", "id"],
                        {
                            "kind": {"enum": ["image-digest", "commit", "artifact-sha256"]},
                            "id": _TEXT,
                        },
                    ),
                },
            ),
            "discovery": _closed(
                ["url", "sha256", "engramVersion", "document"],
                {
                    "url": _TEXT,
                    "sha256": _HEX64,
                    "engramVersion": {"type": "string"},
                    "document": {"type": "object"},
                },
            ),
            "claim": _closed(
                ["tier", "badge", "certified"],
                {
                    "tier": {"enum": [1, 2, 3]},
                    "badge": {"enum": ["Reader", "Writer", "Full"]},
                    "certified": {"type": "boolean"},
                },
            ),
            "results": _closed(
                ["totals", "requirements"],
                {
                    "totals": _closed(
                        ["executedPass", "executedFail", "skipped", "blocked"],
                        {
                            name: {"type": "integer", "minimum": 0}
                            for name in ("executedPass", "executedFail", "skipped", "blocked")
                        },
                    ),
                    "requirements": {
                        "type": "array",
                        "minItems": 1,
                        "items": _closed(
                            ["id", "scenario", "result"],
                            {
                                "id": {
                                    "type": "string",
                                    "pattern": r"^engram\.[a-z0-9-]+(\.[a-z0-9-]+)+$",
                                },
                                "scenario": _TEXT,
                                "result": _RESULT,
                                "assertions": {"type": "integer", "minimum": 1},
                                "detail": {"type": "string"},
                            },
                        ),
                    },
                },
            ),
            "witnessSha256": _HEX64,
            "assertionCount": {"type": "integer", "minimum": 1},
            "detail": _closed(
                ["nonPass"],
                {
                    "nonPass": {
                        "type": "array",
                        "items": _closed(
                            ["id", "result", "detail"],
                            {"id": _TEXT, "result": _RESULT, "detail": {"type": "string"}},
                        ),
                    }
                },
            ),
            "signature": _closed(
                ["alg", "keyId", "publicKey", "over", "value"],
                {
                    "alg": {"const": "Ed25519"},
                    "keyId": _TEXT,
                    "publicKey": _B64URL,
                    "over": {"const": list(SIGNED)},
                    "value": _B64URL,
                },
            ),
        },
    ),
}

__all__ = ["BUNDLE_SCHEMA", "SIGNED", "SUITE_NAME", "UNSIGNED"]
