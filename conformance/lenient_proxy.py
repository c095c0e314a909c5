#!/usr/bin/env python3
"""A daemon that answers like another protocol v1 implementation would be allowed to.

It starts `MEMOREE serve` on a private socket and relays frames to it, rewriting each response
in ways protocol v1 and the facts sheet permit but Memoree does not do:

* an envelope that a strict one-step parser rejects gets `request_id: "req_transport"`, as the
  reference does (Memoree echoes the request's own id; DIVERGENCES.md);
* every error message is replaced by words of its own that name no field or identifier
  (protocol v1 makes the message "for explanation"; `--level v1` checks only that it is a
  string), and hints are dropped for codes the facts sheet gives no hint, reworded for the
  others;
* retrieval hints are reworded the same way;
* every result object gains an extra field;
* a fifth concurrent connection is accepted and closed without a frame, as the reference does
  (Memoree answers it with a busy envelope).

CI runs `memoree-conformance --level v1` against it: every v1 trial must still pass, which
shows that v1 cases do not assert Memoree's wording, request_id choices or exact field sets.

Usage (as a --daemon-command): lenient_proxy.py {endpoint} {data_dir} /path/to/memoree
"""

import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

ENVELOPE_KEYS = {"v", "request_id", "op", "idempotency_key", "context", "context_source", "input"}
CONTEXT_KEYS = {"workspace_id", "project_id", "task_id", "component", "pins"}
SOURCES = {"explicit", "session", "marker", "personal", "none"}
OPS = {
    "context.resolve", "capabilities", "instructions", "schema", "artifact.put", "artifact.get",
    "artifact.revise", "artifact.history", "artifact.forget", "claim.assert", "claim.get",
    "claim.history", "claim.revise", "claim.retract", "relation.put", "relation.list",
    "conflict.list", "search", "memory.recall", "context.build", "doctor", "verify",
    "backup.create",
}
HINTED = {"NO_AMBIENT_CONTEXT", "REVISION_CONFLICT", "IDEMPOTENCY_CONFLICT", "INDEX_NOT_READY",
          "SCOPE_VIOLATION", "REASONER_ERROR"}
RESULT_HINTS = {"broaden_hint", "refine_hint", "claims_refine_hint", "artifact_refs_refine_hint"}


def strict_parse_fails(body):
    """Whether a strict, one-step envelope parser (as in the reference) rejects `body`."""
    try:
        doc = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return True
    if not isinstance(doc, dict) or set(doc) - ENVELOPE_KEYS:
        return True
    if not isinstance(doc.get("request_id"), str) or doc.get("op") not in OPS:
        return True
    v = doc.get("v", 1)
    if type(v) is not int or not 0 <= v < 2**32:
        return True
    if doc.get("context_source", "none") not in SOURCES:
        return True
    context = doc.get("context")
    if context is not None and (not isinstance(context, dict) or set(context) - CONTEXT_KEYS):
        return True
    return False


def reword(text):
    return " ".join(reversed(text.split()))


def replace_message(code):
    return f"the request was refused ({code.lower()})"


def rewrite(body, response):
    envelope = json.loads(response.decode("utf-8"))
    error = envelope.get("error")
    if isinstance(error, dict):
        if strict_parse_fails(body):
            envelope["request_id"] = "req_transport"
        error["message"] = replace_message(str(error.get("code", "")))
        if error.get("code") in HINTED and "hint" in error:
            error["hint"] = reword(error["hint"])
        else:
            error.pop("hint", None)
    result = envelope.get("result")
    if isinstance(result, dict):
        for key in RESULT_HINTS & set(result):
            result[key] = reword(result[key])
        result["x_lenient_proxy"] = True
    return json.dumps(envelope).encode("utf-8")


def read_frame(sock):
    header = b""
    while len(header) < 4:
        chunk = sock.recv(4 - len(header))
        if not chunk:
            return None
        header += chunk
    (length,) = struct.unpack(">I", header)
    body = bytearray()
    while len(body) < length:
        chunk = sock.recv(min(1 << 20, length - len(body)))
        if not chunk:
            return None
        body += chunk
    return bytes(body)


def write_frame(sock, body):
    sock.sendall(struct.pack(">I", len(body)) + body)


SLOTS = threading.BoundedSemaphore(4)


def serve_one(client, inner_path):
    if not SLOTS.acquire(blocking=False):
        client.close()
        return
    try:
        relay(client, inner_path)
    finally:
        SLOTS.release()


def relay(client, inner_path):
    with client:
        body = read_frame(client)
        if body is None:
            return
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as inner:
            inner.connect(inner_path)
            write_frame(inner, body)
            inner.shutdown(socket.SHUT_WR)
            response = read_frame(inner)
        if response is not None:
            write_frame(client, rewrite(body, response))


def listen(endpoint):
    if endpoint.startswith("unix://"):
        path = endpoint[len("unix://"):]
        os.makedirs(os.path.dirname(path), exist_ok=True)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(path)
    elif endpoint.startswith("tcp://"):
        host, port = endpoint[len("tcp://"):].rsplit(":", 1)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, int(port)))
    else:
        raise SystemExit(f"unsupported endpoint {endpoint}")
    sock.listen(16)
    return sock


def main():
    endpoint, data_dir, memoree = sys.argv[1:4]
    runtime = tempfile.mkdtemp(prefix="lenient-proxy-")
    inner_path = os.path.join(runtime, "inner.sock")
    daemon = subprocess.Popen(
        [memoree, "serve", "--listen", "unix://" + inner_path, "--data-dir", data_dir],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 20
        while not os.path.exists(inner_path):
            if daemon.poll() is not None or time.time() > deadline:
                raise SystemExit("the inner daemon did not start")
            time.sleep(0.01)
        server = listen(endpoint)
        while True:
            client, _ = server.accept()
            threading.Thread(target=serve_one, args=(client, inner_path), daemon=True).start()
    finally:
        daemon.terminate()
        daemon.wait()


if __name__ == "__main__":
    main()
