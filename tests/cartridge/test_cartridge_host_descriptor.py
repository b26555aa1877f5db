"""engram.cartridge.load_host_descriptor, the library's reader of the host descriptor format
(issue 28: it lived in the CLI), and the attestation queries beside Cartridge."""

from __future__ import annotations

from pathlib import Path

import pytest

from engram.cartridge import Cartridge, Host, HostTool, load_host_descriptor
from engram.cartridge.internals import level_count, list_attestations
from engram.errors import InvalidRequest

REFERENCE_ACX = sorted(
    (Path(__file__).resolve().parents[1] / "vectors" / "acx-reference").rglob("*.acx")
)


@pytest.mark.req("engram.cartridge.cli-errors")
def test_a_descriptor_is_read_into_a_host_with_defaults_for_what_it_leaves_out() -> None:
    host = load_host_descriptor(
        b'{"protocolRevisions": ["2025-11-25"], "tools": [{"name": "fs.read", "scopes": '
        b'["read"], "inputSchema": {"type": "object"}}], "model": {"toolUse": false}, '
        b'"filesystem": {"read": ["**"]}, "network": null}',
        "host.json",
    )
    assert host == Host(
        protocol_revisions=("2025-11-25",),
        tools=(HostTool("fs.read", frozenset({"read"}), {"type": "object"}),),
        tool_use=False,
        context_window_tokens=200000,
        filesystem={"read": ("**",)},
        network_egress="none",
    )


@pytest.mark.req("engram.cartridge.cli-errors")
@pytest.mark.parametrize(
    ("document", "named"),
    [
        (b'{"model": {"contextWindowTokens": true}}', "model.contextWindowTokens must be an int"),
        (b'{"model": {"toolUse": 1}}', "model.toolUse must be true or false"),
        (b'{"tools": [{"name": 3}]}', r"tools\[0\].name must be a string"),
        (b'{"tools": ["fs.read"]}', r"tools\[0\] must be an object"),
        (b'{"filesystem": {"read": [1]}}', "filesystem.read must be an array of strings"),
        (b"[]", "host.json"),
    ],
)
def test_a_member_of_the_wrong_type_is_refused_naming_it(document: bytes, named: str) -> None:
    with pytest.raises(InvalidRequest, match=named):
        load_host_descriptor(document, "host.json")


@pytest.mark.req("engram.cartridge.cli-errors")
def test_attestations_are_listed_and_levels_counted_without_sql_in_the_caller() -> None:
    for path in REFERENCE_ACX:
        with Cartridge.open(path) as cartridge:
            rows = list_attestations(cartridge)
            levels = level_count(cartridge)
        assert levels == sum(1 for r in rows if r.type == "vc-2.0")
        assert all(set(r.to_wire()) == {"id", "type", "mediaType"} for r in rows)
