"""Tier 3 (Full) probes: the key list, the signature of every signed document, scopes.

Spec: Engram v0.1 Conformance §"Tier 3 — Full" (p3.*). The signed bytes are recomputed with
engram's RFC 8785 canonicaliser, never taken from the provider. Health and financial beliefs
are recognised by the documented category members of :mod:`engram.core.context_wire`, so the
scope check does not depend on engram's own belief shape.
"""

from __future__ import annotations

from engram.conformance import _envelope as env
from engram.conformance._probe import ProbeRun, admin_add, admin_delete, beliefs, error_code
from engram.core.canonical import JsonObject
from engram.core.context_wire import SENSITIVE_CATEGORIES, belief_id, is_sensitive


async def keys(run: ProbeRun) -> None:
    got = await run.client.get("/.well-known/engram-keys")
    found = env.key_list(got.body) if got.status == 200 else None
    ok = found is not None and len(found) > 0 and all(isinstance(k, dict) for k in found)
    run.check("p3.keys-endpoint", "keys", ok, f"HTTP {got.status}: no non-empty Ed25519 key list")
    problems = [p for k in found or [] for p in env.key_problems(k)]
    run.check("p3.key-fields", "keys", ok and not problems, "; ".join(problems) or "no keys")
    for key in found or []:
        kid = key.get("kid") if isinstance(key, dict) else None
        if isinstance(kid, str):
            run.observed.keys[kid] = key


def signed(run: ProbeRun, body: JsonObject, scenario: str) -> None:
    """``kid`` is published and the signature verifies under it."""
    kid = body.get("kid")
    run.check(
        "p3.kid-published",
        scenario,
        isinstance(kid, str) and kid in run.observed.keys,
        f"{scenario}: kid {kid!r} is not in /.well-known/engram-keys",
    )
    problem = env.signature_problem(body, run.observed.keys)
    run.check("p3.signature-verifies", scenario, problem is None, f"{scenario}: {problem}")


async def scopes(run: ProbeRun) -> None:
    """``scope=professional`` leaves out health and financial beliefs, says so and is signed;
    ``scope=invalid`` is ``400 invalid_scope``."""
    rid = "p3.scope-professional"
    sensitive = [b for b in beliefs(run.observed.export) if is_sensitive(b)]
    added: list[str] = []
    if not sensitive and run.options.admin_token is not None:
        # Give the subject one belief of each sensitive category, then look for them.
        for category in sorted(SENSITIVE_CATEGORIES):
            ident = await admin_add(run, category)
            if ident is not None:
                added.append(ident)
                sensitive.append({"id": ident, "category": category})
    got = await run.client.get(
        "/v1/context", token=run.options.token, params={"scope": "professional"}
    )
    body = got.body if isinstance(got.body, dict) else {}
    leaked = [belief_id(b) or "(no id)" for b in beliefs(body) if is_sensitive(b)]
    run.check(
        rid, "scope", got.status == 200 and bool(body), f"scope=professional: HTTP {got.status}"
    )
    run.check(rid, "scope", not leaked, f"scope=professional carries sensitive beliefs {leaked}")
    run.check(rid, "scope", body.get("scope") == "professional", f"scope is {body.get('scope')!r}")
    if not sensitive:
        run.skip(
            rid,
            "scope",
            "the subject behind the token holds no health or financial beliefs, "
            "so their exclusion cannot be observed",
        )
    if body:
        signed(run, body, "scope")
    for ident in added:
        await admin_delete(run, ident)
    got = await run.client.get("/v1/context", token=run.options.token, params={"scope": "invalid"})
    code = error_code(got)
    run.check(
        "p3.invalid-scope-400",
        "scope",
        got.status == 400 and code == "invalid_scope",
        f"scope=invalid: HTTP {got.status} code {code!r}",
    )


__all__ = ["keys", "scopes", "signed"]
