"""The scrub gate finds every rule, in any letter case, and its fast path never misses a finding.

SPEC §7.5 (lboel/acx@85f1358). The gate skips a rule's regular expression when none of the
rule's literal needles occurs in the data; these tests pin that the skip is exact: on any input
the gate reports what running every rule's expression over every byte reports.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.cartridge import ScrubBlocked
from engram.cartridge import _scrub as scrub_module
from engram.cartridge.internals import Finding, scan

EVERY_RULE = [
    ("private-key", b"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n"),
    ("aws-access-key-id", b"key ASIAIOSFODNN7EXAMPLE here"),
    ("aws-secret-key", b"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("github-token", b"github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"),
    ("gitlab-token", b"GITLAB=glpat-abcdefghij0123456789xy"),
    ("slack-token", b"xoxp-1234567890-abcdef"),
    ("api-key-sk", b"sk-ant-" + b"q" * 30),
    ("google-api-key", b"maps AIza" + b"SyD" * 11 + b"xy"),
    ("stripe-key", b"rk_live_" + b"4eC39HqLyjWDarjtT1zdp7dc"),
    ("jwt", b"eyJhbGciOiJI.eyJzdWIiOiIx.signature_part"),
    ("authorization-header", b"AUTHORIZATION: Basic dXNlcjpwYXNzd29yZA=="),
    ("secret-assignment", b'"Client_Secret": "9f8e7d6c5b4a"'),
    ("url-credentials", b"postgresql://app:Sup3rSecret@db.internal/app"),
    ("absolute-home-path", b"cache in /var/home/dana/cache"),
    ("absolute-home-path", b"ran as /root/.bashrc"),
    ("windows-home-path", b"c:/documents and settings/Dana/Desktop"),
]


def _full_scan(objects: dict[str, bytes]) -> list[Finding]:
    """Every rule's expression over every byte, without the literal pre-check."""
    found: list[Finding] = []
    for path in sorted(objects):
        for data, name_only in ((path.encode(), True), (objects[path], False)):
            for rule, pattern in scrub_module._RULES:
                for match in pattern.finditer(data):
                    line = 0 if name_only else data.count(b"\n", 0, match.start()) + 1
                    found.append(Finding(path, line, rule, match.start()))
    return found


def _without_entropy(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.rule not in ("high-entropy", "repo-identifier-leak")]


@pytest.mark.req("engram.cartridge.scrub-gate")
def test_every_rule_has_its_literal_needles() -> None:
    assert [rule for rule, _ in scrub_module._RULES] == list(scrub_module._NEEDLES)
    for needles in scrub_module._NEEDLES.values():
        assert needles
        assert all(n == n.lower() for n in needles)


@pytest.mark.req("engram.cartridge.scrub-gate")
@pytest.mark.parametrize(("rule", "data"), EVERY_RULE)
def test_each_rule_blocks(rule: str, data: bytes) -> None:
    objects = {"rom/knowledge/notes.md": b"first line\n" + data + b"\n"}
    found = _without_entropy(scan(objects))
    assert [(f.line, f.rule) for f in found] == [(2, rule)]
    with pytest.raises(ScrubBlocked, match=f"notes.md:2: {rule}"):
        scrub_module.require_clean(objects)


@pytest.mark.req("engram.cartridge.scrub-gate")
def test_a_secret_in_a_file_name_is_found_too() -> None:
    found = scan({"rom/knowledge/AKIAIOSFODNN7EXAMPLE.md": b"fine"})
    assert [(f.line, f.rule) for f in found] == [(0, "aws-access-key-id")]


_FRAGMENTS = [data for _, data in EVERY_RULE] + [
    b"password",
    b"API",
    b"/home/",
    b"Users",
    b"://",
    b"\n",
    b" ",
    b"=",
    b": ",
    b"C:\\",
    b"@",
    b"eyJ",
    b"sk-",
    b"0123456789abcdefghij",
]


@pytest.mark.req("engram.cartridge.scrub-gate")
@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(
        st.one_of(st.sampled_from(_FRAGMENTS), st.binary(max_size=12)), min_size=1, max_size=12
    ),
    flips=st.lists(st.integers(0, 10_000), max_size=6),
)
def test_the_fast_path_finds_exactly_what_a_full_scan_finds(
    pieces: list[bytes], flips: list[int]
) -> None:
    data = bytearray(b"".join(pieces))
    for position in flips:  # change letter case somewhere: case-insensitive rules still fire
        if data:
            at = position % len(data)
            data[at] = ord(chr(data[at]).swapcase()[0]) & 0xFF
    objects = {"rom/skills/x/notes.md": bytes(data)}
    assert _without_entropy(scan(objects)) == _full_scan(objects)


@pytest.mark.req("engram.cartridge.scrub-gate")
def test_a_secret_in_a_large_memory_baseline_is_still_found() -> None:
    clean = b"".join(b'{"summary":"service %d retries before paging"}\n' % i for i in range(20_000))
    leaky = clean + b'{"summary":"deploy key ghp_' + b"A" * 36 + b'"}\n'
    assert scan({"memory:all": clean}) == []
    (finding,) = scan({"memory:all": leaky})
    assert (finding.path, finding.line, finding.rule) == ("memory:all", 20_001, "github-token")


_TOKEN_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_=-"


@pytest.mark.req("engram.cartridge.scrub-gate")
@settings(max_examples=400, deadline=None)
@given(
    tokens=st.lists(
        st.binary(max_size=40)
        | st.lists(st.sampled_from(_TOKEN_BYTES), min_size=15, max_size=40).map(bytes),
        max_size=8,
    ),
    separator=st.sampled_from([b"", b" ", b"\0", b'"', b".", b"\n", b"\xff"]),
)
def test_the_group_screen_never_rules_out_a_high_entropy_token(
    tokens: list[bytes], separator: bytes
) -> None:
    # A group is screened from its bytes' kinds (_may_be_random) before any token is measured;
    # whatever it rules out must be what _high_entropy finds nothing in.
    data = separator.join(tokens)
    if scrub_module._high_entropy(data):
        assert scrub_module._may_be_random(data)


@pytest.mark.req("engram.cartridge.scrub-gate")
def test_a_high_entropy_token_among_many_memory_payloads_is_still_found() -> None:
    clean = {
        f"memory:{i:05d}": b'{"id":"%032x","summary":"retries %d"}' % (i, i) for i in range(600)
    }
    leaky = dict(clean)
    leaky["memory:00599"] = b'{"summary":"blob Zq8Xv2Lp0Rt7Wm4Yk9Bn3Cd6Fg1Hj5"}'
    assert scan(clean) == []
    (finding,) = scan(leaky)
    assert (finding.path, finding.rule) == ("memory:00599", "high-entropy")
