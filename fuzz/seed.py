#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into fuzz/corpus/<target>/ from the repository's
own files: Arcane's documents (sliced into small ones), the built-in overlays and declarations,
the simulator's demo state, the golden result texts, and a few hand-written messages. Run by
fuzz/run.sh; the corpora are not committed (fuzz/corpus is ignored), only this script.
Seeds already there are kept (libFuzzer adds its own finds beside them)."""

import hashlib
import json
import pathlib
import sys

import yaml  # PyYAML: writes the YAML seeds of the OpenAPI target

FUZZ = pathlib.Path(__file__).resolve().parent
ROOT = FUZZ.parent
CORPUS = FUZZ / "corpus"


def put(target, data):
    if isinstance(data, str):
        data = data.encode()
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    name = "seed-" + hashlib.sha1(data).hexdigest()[:16]
    (d / name).write_bytes(data)


def refs(v, out):
    if isinstance(v, dict):
        r = v.get("$ref")
        if isinstance(r, str) and r.startswith("#/components/"):
            out.add(tuple(r[len("#/components/"):].split("/", 1)))
        for x in v.values():
            refs(x, out)
    elif isinstance(v, list):
        for x in v:
            refs(x, out)


def sliced(doc, paths):
    """The document with only `paths` and the components they reach."""
    out = {k: v for k, v in doc.items() if k not in ("paths", "components")}
    out["paths"] = {p: doc["paths"][p] for p in paths}
    comps = doc.get("components", {})
    need, seen = set(), set()
    refs(out["paths"], need)
    while need - seen:
        kind, name = (need - seen).pop()
        seen.add((kind, name))
        node = comps.get(kind, {}).get(name)
        if node is not None:
            refs(node, need)
    picked = {}
    for kind, name in seen:
        if name in comps.get(kind, {}):
            picked.setdefault(kind, {})[name] = comps[kind][name]
    out["components"] = picked
    return out


def openapi():
    for name in ["openapi-v2.8.0.json", "openapi-v1.11.2.yaml"]:
        text = (ROOT / "third_party/arcane" / name).read_text()
        doc = json.loads(text) if name.endswith(".json") else yaml.safe_load(text)
        paths = sorted(doc["paths"])
        # Groups of neighbouring paths (one resource's operations together), small documents.
        for i in range(0, len(paths), 6):
            small = sliced(doc, paths[i : i + 6])
            if name.endswith(".json"):
                put("openapi", json.dumps(small, indent=1))
            else:
                put("openapi", yaml.safe_dump(small, sort_keys=False))
    put("openapi", '{"openapi":"3.0.0","info":{"title":"x","version":"1"},"paths":{}}')
    put("openapi", "openapi: 3.1.0\ninfo: {title: x, version: '1'}\npaths:\n  /a/{id}:\n    get: {operationId: get-a, parameters: [{name: id, in: path, required: true, schema: {type: string}}]}\n")


def overlay():
    for d in ["overrides", "catalog"]:
        for f in sorted((ROOT / d).glob("*.yaml")):
            text = f.read_text()
            put("overlay", text)
            # Each top-level section alone, too: smaller seeds mutate faster.
            data = yaml.safe_load(text) or {}
            for k, v in data.items():
                if isinstance(v, dict):
                    for i, (kk, vv) in enumerate(v.items()):
                        if i >= 12:
                            break
                        put("overlay", yaml.safe_dump({k: {kk: vv}}, sort_keys=False))
                elif isinstance(v, list):
                    for item in v[:12]:
                        put("overlay", yaml.safe_dump({k: [item]}, sort_keys=False))
    put("overlay", "a: &x [1, 2]\nb: *x\nc: {<<: {d: 1}}\n")


def values():
    state = json.loads((ROOT / "crates/sim/data/demo-state.json").read_text())
    out = []
    for kind, items in state.items():
        out.append({"success": True, "data": items[:3]})
        for item in items[:4]:
            out.append(item)
            out.append({"success": True, "data": item})
    return out


def texts():
    out = []
    for f in sorted((ROOT / "tests/golden").glob("*.md")):
        out.append(f.read_text())
    out += [
        "postgres://app:hunter2@db/x",
        "run --db-password=hunter2 --token abc -v",
        "API_TOKEN=abc\nPOSTGRES_PASSWORD=s3cr3t\n# comment\nexport KEY='v'\n",
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc",
        "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n",
        "# heading\n- [x](javascript:alert(1)) <b>x</b> `code` *em* | a | b |\nwww.example.com a@b.co https://x.y",
        "\x1b[31mred\x1b[0m\rover\u2028line\u0007",
    ]
    return out


def redact():
    for v in values():
        put("redact", json.dumps(v))
    for t in texts():
        put("redact", t)
    put("redact", json.dumps({"env": ["A=1", "PASSWORD=x"], "labels": {"traefik.http.middlewares.a.basicauth.users": "u:$apr1$x"}, "envContent": "TOKEN=abc\n"}))


def markdown():
    for t in texts():
        for target in ["escape", "error_text"]:
            put(target, t)
    for body in [
        '{"type":"about:blank","title":"Bad Request","status":400,"detail":"invalid name","errors":[{"message":"must match","location":"body.name"}]}',
        '{"success":false,"error":"Container not found"}',
        '{"success":false,"data":{"error":"no such image"}}',
        "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>",
    ]:
        put("error_text", body)
    for seg in ["web-1", "a/b", "..", "%2e%2e", "x?y#z", "名前", "a\\b", " "]:
        put("path_segment", seg)


def client_profile():
    for i, v in enumerate(values()):
        put("client_profile", bytes([i % 256]) + json.dumps(v).encode())
    for i, t in enumerate(['{"Name":"web"}', '["a","b"]', "not json", '{"RestartPolicy":{"Name":"always"}}', "1", '"text"']):
        put("client_profile", bytes([(i * 37) % 256]) + t.encode())


def jsonlines():
    streams = [
        ['{"type":"activity","activityId":"act-1"}', '{"log":"latest: Pulling from library/nginx"}',
         '{"log":"1a2b3c4d5e6f: Pull complete"}', '{"log":"Status: Downloaded newer image for nginx:latest"}', '{"done":true}'],
        ['{"type":"activity","activityId":"act-2"}', '{"log":" Container web-1  Started"}', '{"log":" Network app_default  Created"}',
         '{"error":"pull access denied"}'],
        ['{"log":"partial', "not json", '{"other":1}', '{"log":"\\u001b[31mred\\r\\nline"}'],
    ]
    for i, s in enumerate(streams):
        body = "\n".join(s) + "\n"
        for how in [0, 3, 0x80 | 7]:
            put("jsonlines", bytes([how]) + body.encode())


def websocket():
    def rec(kind, payload=b""):
        if isinstance(payload, str):
            payload = payload.encode()
        return bytes([kind, len(payload)]) + payload

    logs = rec(0, "line one\nline two") + rec(1, "[STDERR] warn\r\n") + rec(2, "p") + rec(0, "\x1b[2Jdone")
    put("websocket", bytes([0]) + logs)
    put("websocket", bytes([0]) + rec(0, "Failed to stream container logs: no such container"))
    stats = rec(0, '{"cpu_stats":{"cpu_usage":{"total_usage":1}},"statsHistory":[1,2]}') + rec(0, "not json") + rec(0, '{"memory_stats":{"usage":5}}')
    put("websocket", bytes([1]) + stats)
    put("websocket", bytes([1]) + rec(0, '{"error":"container is not running"}'))
    exec_ = rec(1, "/ # ls -la /app\r\n") + rec(1, "total 0\r\nfile\r\n") + rec(3) + rec(1, "/ # ")
    put("websocket", bytes([2]) + exec_)
    put("websocket", bytes([2]) + rec(0, "Error creating exec: container not running"))


def jsonrpc():
    def msg(i, method, params=None):
        m = {"jsonrpc": "2.0", "id": i, "method": method}
        if params is not None:
            m["params"] = params
        return json.dumps(m)

    calls = [
        msg(1, "tools/list"),
        msg(2, "tools/call", {"name": "arcane_find_action", "arguments": {"query": "restart a container"}}),
        msg(3, "tools/call", {"name": "arcane_execute_action", "arguments": {"action": "container.list", "params": {}}}),
        msg(4, "tools/call", {"name": "arcane_execute_action", "arguments": {"action": "container.delete", "params": {"containerId": "web-1"}, "confirm": True}}),
        msg(5, "tools/call", {"name": "arcane_container", "arguments": {"action": "get", "params": '{"containerId":"web-1"}'}}),
        msg(6, "tools/call", {"name": "arcane_container_restart", "arguments": {"containerId": "../x"}}),
        msg(7, "resources/list"),
        msg(8, "resources/read", {"uri": "arcane://catalog"}),
        msg(9, "resources/templates/list"),
        msg(10, "prompts/list"),
        msg(11, "completion/complete", {"ref": {"type": "ref/resource", "uri": "arcane://actions/{id}"}, "argument": {"name": "id", "value": "cont"}}),
        msg(12, "logging/setLevel", {"level": "debug"}),
        msg(13, "ping"),
        '{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"x","arguments":"{}"}}',
        '{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}',
        '[{"jsonrpc":"2.0","id":15,"method":"ping"}]',
        '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}',
        "not json",
    ]
    for which in range(3):
        put("jsonrpc", bytes([which]) + "\n".join(calls).encode() + b"\n")
        for c in calls:
            put("jsonrpc", bytes([which]) + c.encode() + b"\n")


def oauth():
    """Byte 0: an access token; 1: a JWKS document; 2: a users file; 3: a client registration;
    4: a sealed token; 5: a query or form (fuzz/fuzz_targets/oauth.rs)."""
    import base64

    def b64(v):
        return base64.urlsafe_b64encode(json.dumps(v).encode()).rstrip(b"=").decode()

    claims = {"iss": "https://idp.example", "aud": "https://mcp.example/mcp", "sub": "alice", "exp": 4102444800, "scope": "arcane:read"}
    for header in [{"alg": "RS256", "kid": "2011-04-29"}, {"alg": "none"}, {"alg": "HS256"}, {"alg": "ES256", "typ": "at+jwt"}, {"alg": "PS512", "kid": "x"}]:
        put("oauth", b"\0" + f"{b64(header)}.{b64(claims)}.c2lnbmF0dXJl".encode())
    put("oauth", b"\0" + b"not.a.jwt")
    jwks = {"keys": [
        {"kty": "RSA", "kid": "a", "alg": "RS256", "use": "sig", "e": "AQAB", "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"},
        {"kty": "EC", "crv": "P-256", "kid": "b", "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"},
        {"kty": "OKP", "crv": "Ed25519", "kid": "c", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},
        {"kty": "oct", "k": "c2VjcmV0"},
    ]}
    put("oauth", b"\1" + json.dumps(jwks).encode())
    put("oauth", b"\1" + b'{"keys": [{"kty": "RSA"}]}')
    for users in [
        "users:\n  - match: {sub: alice}\n    arcaneKeyEnv: KEY\n    preset: deploy\n  - match: {groups: ops}\n    arcaneKeyEnv: KEY\n    tools: [container]\n",
        "users:\n  - match: {sub: a}\n    arcaneKeyFile: key\n",
        "users: []\n",
        "users:\n  - match: {sub: a}\n    match: {sub: b}\n",
    ]:
        put("oauth", b"\2" + users.encode())
    for reg in [
        {"client_name": "claude.ai", "redirect_uris": ["https://claude.ai/api/mcp/auth_callback"]},
        {"redirect_uris": ["http://127.0.0.1:3000/cb", "cursor://x/cb"], "grant_types": ["authorization_code"]},
        {"redirect_uris": ["javascript:alert(1)"]},
    ]:
        put("oauth", b"\3" + json.dumps(reg).encode())
    put("oauth", b"\4" + b"amcp_at_" + base64.urlsafe_b64encode(bytes(64)).rstrip(b"="))
    put("oauth", b"\4" + b"amcp_rt_AAAA")
    put("oauth", b"\5" + b"response_type=code&client_id=a&redirect_uri=x&redirect_uri=y")
    put("oauth", b"\5" + b"dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXkE9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")


def main():
    openapi()
    overlay()
    redact()
    markdown()
    client_profile()
    jsonlines()
    websocket()
    jsonrpc()
    oauth()
    for d in sorted(CORPUS.iterdir()):
        print(f"{d.name}: {len(list(d.iterdir()))} files", file=sys.stderr)


if __name__ == "__main__":
    main()
