"""The MCP session of tests/mcp_session.rs, driven by the official Python MCP SDK.

Usage: python session.py MEMOREE_BINARY MEMOREE_HOME PROJECT_DIR

Runs the same session twice against `memoree mcp`: once negotiated the way the SDK does by
default (`server/discover`, the 2026-07-28 lifecycle) and once with the `initialize`
handshake. Exits non-zero on the first failed check; prints one summary line on success.
"""

import asyncio
import json
import os
import sys

import jsonschema
from mcp import StdioServerParameters
from mcp.client.client import Client

BINARY, HOME, PROJECT = sys.argv[1:4]

TOOLS = {
    "memory_retrieve", "recall", "memory_probe", "search", "context_build", "artifact_put",
    "artifact_get", "citation_get", "artifact_revise", "artifact_history", "artifact_forget",
    "claim_assert", "claim_get", "claim_revise", "claim_retract", "claim_history", "relation_put",
    "relation_list", "conflict_list", "capabilities", "doctor",
}

checks = 0


def check(condition, what):
    global checks
    if not condition:
        raise AssertionError(what)
    checks += 1


def server():
    env = {key: value for key, value in os.environ.items() if not key.startswith("MEMOREE_")}
    env["MEMOREE_HOME"] = HOME
    return StdioServerParameters(command=BINARY, args=["mcp"], env=env, cwd=PROJECT)


async def ok(client, schemas, tool, arguments):
    result = await client.call_tool(tool, arguments)
    check(not result.is_error, f"{tool} failed: {result.content[0].text}")
    structured = result.structured_content
    jsonschema.validate(structured, schemas[tool])
    check(result.content[0].text.startswith(f"{tool}: "), f"{tool} summary: {result.content[0].text}")
    return structured


async def failed(client, tool, arguments):
    result = await client.call_tool(tool, arguments)
    check(result.is_error, f"{tool} succeeded: {result.content[0].text}")
    envelope = result.structured_content
    check(envelope["ok"] is False and "code" in envelope["error"], f"{tool}: {envelope}")
    return envelope


async def session(mode, tag):
    async with Client(server(), mode=mode) as client:
        listed = await client.list_tools()
        names = {tool.name for tool in listed.tools}
        check(names == TOOLS, f"{mode}: tools {sorted(names)}")
        schemas = {}
        for tool in listed.tools:
            jsonschema.Draft202012Validator.check_schema(tool.input_schema)
            jsonschema.Draft202012Validator.check_schema(tool.output_schema)
            schemas[tool.name] = tool.output_schema
            read_only = tool.annotations.read_only_hint
            check(read_only == ("idempotency_key" not in tool.input_schema["properties"]), f"{tool.name} hints")

        text = f"[{tag}] Backups run nightly at 02:00 UTC and keep 14 days."
        span = f"[{tag}] Backups run nightly"
        put = await ok(client, schemas, "artifact_put",
                       {"kind": "note", "title": f"Backup policy {tag}", "content": {"type": "text", "data": text}})
        art, rev = put["artifact_id"], put["revision_id"]
        check(put["created"] is True, "put created")

        # A host retry of the identical call replays the first write.
        retry = await ok(client, schemas, "artifact_put",
                         {"kind": "note", "title": f"Backup policy {tag}", "content": {"type": "text", "data": text}})
        check(retry["artifact_id"] == art and retry["created"] is False, f"retry: {retry}")

        claim = await ok(client, schemas, "claim_assert", {
            "claim_type": "fact",
            "statement": f"Backups run nightly ({tag}).",
            "evidence": [{"artifact_id": art, "revision_id": rev, "start_byte": 0,
                          "end_byte": len(span.encode())}],
        })
        recalled = await ok(client, schemas, "recall", {"query": f"backups nightly {tag}"})
        check(recalled["presence"] == "claims", f"recall presence: {recalled}")
        found = [c for c in recalled["claims"] if c["claim_id"] == claim["claim_id"]]
        check(len(found) == 1, f"recall finds the claim: {recalled}")
        citation = found[0]["evidence"][0]["citation"]
        check(citation == f"memoree://artifact/{art}@{rev}#0-{len(span.encode())}", citation)

        retrieved = await ok(client, schemas, "memory_retrieve", {"query": f"backups nightly {tag}"})
        check(retrieved["presence"] == "claims" and "recovery" not in retrieved, f"memory_retrieve: {retrieved}")
        check(claim["claim_id"] in [c["claim_id"] for c in retrieved["claims"]], f"memory_retrieve: {retrieved}")
        probed = await ok(client, schemas, "memory_probe", {"query": f"backups {tag}"})
        check(probed["retrieval_tier"] == "unqualified_candidate", f"memory_probe: {probed}")

        read = await client.read_resource(citation)
        check(read.contents[0].text == span, f"citation text: {read.contents[0]}")
        fetched = await ok(client, schemas, "citation_get", {"citation": citation})
        check(fetched["content"] == span and fetched["citation"] == citation, f"citation_get: {fetched}")
        check(fetched["content_is_untrusted"] is True and fetched["truncated"] is False, f"citation_get: {fetched}")

        bundle = await ok(client, schemas, "context_build", {"query": f"backups {tag}", "max_bytes": 4096})
        check(f"Backups run nightly ({tag})." in bundle["rendered_markdown"], "bundle has the claim")

        revised = await ok(client, schemas, "artifact_revise", {
            "artifact_id": art, "if_revision": rev,
            "content": {"type": "text", "data": f"[{tag}] Backups run hourly now."},
        })
        check(revised["revision_number"] == 2, f"revise: {revised}")
        stale = await failed(client, "artifact_revise", {
            "artifact_id": art, "if_revision": rev, "content": {"type": "text", "data": "again"},
        })
        check(stale["error"]["code"] == "REVISION_CONFLICT", f"stale revise: {stale}")

        rival = await ok(client, schemas, "claim_assert", {
            "claim_type": "fact", "statement": f"Backups run hourly ({tag}).",
            "evidence": [{"artifact_id": art, "revision_id": revised["revision_id"]}],
        })
        await ok(client, schemas, "relation_put", {
            "source_type": "claim", "source_id": rival["claim_id"], "relation": "contradicts",
            "target_type": "claim", "target_id": claim["claim_id"],
        })
        conflicts = await ok(client, schemas, "conflict_list", {})
        mine = [c for c in conflicts["conflicts"]
                if {claim["claim_id"], rival["claim_id"]} <= set(json.dumps(c).split('"'))]
        check(len(mine) == 1, f"one conflict between the two claims: {conflicts}")

        missing = await failed(client, "artifact_get", {"artifact_id": "art_missing"})
        check(missing["error"]["code"] == "NOT_FOUND" and missing["error"]["message"], f"{missing}")
        return client.protocol_version


async def main():
    modern = await session("auto", "auto")
    legacy = await session("legacy", "legacy")
    check(modern >= "2026-07-28", f"auto negotiated {modern}")
    check(legacy < "2026-07-28", f"legacy negotiated {legacy}")
    print(f"python mcp sdk: {checks} checks passed (auto: {modern}, legacy: {legacy})")


asyncio.run(main())
