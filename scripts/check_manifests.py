"""Validate the registry manifests against the formats their registries publish, offline
(scripts/test-dist.sh runs this; docs/install.md, "Testing the packages").

    python scripts/check_manifests.py PRETTIER_BINARY

- server.json against the MCP registry's server.json schema that its `$schema` names, as the
  registry publishes it: skillsaw (PyPI, pinned in scripts/dist-tools.txt) ships the released
  schemas copied byte for byte from the registry's static-assets repository, with their MIT
  licence (its schemas/mcp_registry/*/SCHEMA-SOURCE.md). The file's SHA-256 is pinned here, so
  another package version cannot swap the schema unnoticed.
- packaging/docker-mcp/server.yaml against the format of Docker's MCP catalog. Docker publishes
  no schema file for it: the format is the Go type `Server` of docker/mcp-registry
  (pkg/servers/types.go) and the catalog's CI runs `cmd/validate` on each entry. Checked here:
  every key is one of those types' fields, with the type they decode to; the offline rules of
  `cmd/validate` (name, title, pinned commit, secret names, parameter references); and the YAML
  formatting `cmd/validate` checks with prettier (`prettier --check`, pinned in
  scripts/dist-tools-npm). Its online checks (the project's licence through GitHub's API, the
  icon) run only on the catalog's pull request.

Each check prints one `ok:` line; the last line is `N passed, N failed`.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import yaml

from checks import Checks

ROOT = Path(__file__).resolve().parent.parent

# skillsaw 0.22.0's copy of https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json
# (modelcontextprotocol/static at a9ba437d9fbbe92076a24b20d56449ac7c7786ac, per its SCHEMA-SOURCE.md).
SCHEMAS = {
    "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json": (
        "v2025_12_11",
        "3fba09590c99f61735d234822279f4223fab9e300c0a81e81c91ab62a4114de0",
    ),
}

checks = Checks()
check = checks.check


# ---------------------------------------------------------------- server.json


def registry_schema(url: str) -> dict:
    if url not in SCHEMAS:
        raise AssertionError(f"server.json names the schema {url}; scripts/check_manifests.py knows {list(SCHEMAS)}")
    folder, sha = SCHEMAS[url]
    data = resources.files("skillsaw").joinpath("schemas", "mcp_registry", folder, "server.schema.json").read_bytes()
    got = hashlib.sha256(data).hexdigest()
    if got != sha:
        raise AssertionError(f"skillsaw's {folder}/server.schema.json has SHA-256 {got}, not the pinned {sha}")
    schema = json.loads(data)
    if schema.get("$id") != url:
        raise AssertionError(f"the packaged schema's $id is {schema.get('$id')}, not {url}")
    return schema


def registry_errors(doc: dict, schema: dict) -> list[str]:
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in validator.iter_errors(doc)]


SERVER_JSON = json.loads((ROOT / "server.json").read_text())


@check("server.json is valid against the MCP registry's published schema it names")
def _():
    schema = registry_schema(SERVER_JSON["$schema"])
    errors = registry_errors(SERVER_JSON, schema)
    assert not errors, errors


@check("the registry's schema refuses a broken server.json (a package without a transport, a version range)")
def _():
    schema = registry_schema(SERVER_JSON["$schema"])
    broken = copy.deepcopy(SERVER_JSON)
    del broken["packages"][0]["transport"]
    broken["packages"][1]["version"] = "latest"
    errors = registry_errors(broken, schema)
    assert any("transport" in e for e in errors) and any("packages/1/version" in e for e in errors), errors


# ---------------------------------------------------------------- Docker MCP catalog

# The fields of docker/mcp-registry's Go types (pkg/servers/types.go), by the YAML key each
# decodes from: a nested dict is a struct, [x] a list of x, "map" a string map, and the rest
# scalars. A key outside these is one the catalog's decoder silently drops.
STR, BOOL, ANY = "str", "bool", "any"
SCHEMA_T: dict = {}  # filled below: it refers to itself
SCHEMA_T.update(
    type=STR, description=STR, properties="schema-list", required=[STR], items={"type": STR},
    anyOf=[{"required": [STR]}], default=ANY,
)
SERVER_T = {
    "name": STR, "image": STR, "type": STR, "dynamic": {"tools": BOOL}, "longLived": BOOL,
    "meta": {"category": STR, "tags": [STR]},
    "about": {"title": STR, "description": STR, "icon": STR},
    "source": {"project": STR, "upstream": STR, "branch": STR, "commit": STR, "directory": STR,
               "dockerfile": STR, "buildTarget": STR},
    "remote": {"transport_type": STR, "url": STR, "headers": "map"},
    "run": {"command": [STR], "volumes": [STR], "user": STR, "env": "map", "allowHosts": [STR],
            "disableNetwork": BOOL},
    "config": {
        "description": STR,
        "secrets": [{"name": STR, "env": STR, "example": STR, "description": STR, "required": BOOL}],
        "env": [{"name": STR, "example": ANY, "value": STR}],
        "parameters": SCHEMA_T,
        "anyOf": [{"required": [STR]}],
    },
    "oauth": [{"provider": STR, "secret": STR, "env": STR}],
    "tools": [{"name": STR, "description": STR, "parameters": ANY, "container": ANY}],
    "requirement": STR,
}


def shape_errors(value, shape, path: str) -> list[str]:
    if shape == ANY:
        return []
    if shape == STR:
        return [] if isinstance(value, str) else [f"{path}: a string, not {value!r}"]
    if shape == BOOL:
        return [] if isinstance(value, bool) else [f"{path}: true or false, not {value!r}"]
    if shape == "map":
        ok = isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
        return [] if ok else [f"{path}: a map of strings"]
    if shape == "schema-list":
        if not isinstance(value, dict):
            return [f"{path}: a map of parameter name to schema"]
        return [e for k, v in value.items() for e in shape_errors(v, SCHEMA_T, f"{path}.{k}")]
    if isinstance(shape, list):
        if not isinstance(value, list):
            return [f"{path}: a list"]
        return [e for i, v in enumerate(value) for e in shape_errors(v, shape[0], f"{path}[{i}]")]
    if not isinstance(value, dict):
        return [f"{path}: a mapping"]
    errors = [f"{path}.{k}: not a field of the catalog's format" for k in value if k not in shape]
    return errors + [e for k, v in value.items() if k in shape for e in shape_errors(v, shape[k], f"{path}.{k}")]


def catalog_errors(entry: dict) -> list[str]:
    """The shape, then the offline rules of docker/mcp-registry's cmd/validate."""
    errors = shape_errors(entry, SERVER_T, "server.yaml")
    if errors:
        return errors
    name = entry.get("name", "")
    if not re.fullmatch(r"[a-z0-9-]+", name):
        errors.append(f"name {name!r}: lowercase letters, digits and hyphens only")
    if entry.get("type") not in ("server", "remote", "poci"):
        errors.append(f"type {entry.get('type')!r}: server (a local container) is ours")
    title = entry.get("about", {}).get("title", "")
    if not title or "MCP" in title or "Server" in title:
        errors.append(f"about.title {title!r}: required, without 'MCP' or 'Server'")
    if any(w not in ("and", "for") and not w[0].isupper() for w in title.split()):
        errors.append(f"about.title {title!r}: every word capitalised")
    if entry.get("type") == "server" and not re.fullmatch(r"[a-f0-9]{40}", entry.get("source", {}).get("commit", "")):
        errors.append("source.commit: a local server pins its revision as a 40-character lowercase SHA-1")
    for s in entry.get("config", {}).get("secrets", []):
        if not re.fullmatch(r"[A-Za-z0-9_-]+\.[A-Za-z0-9._-]+", s["name"]):
            errors.append(f"secret {s['name']!r}: prefix.name")
    params = entry.get("config", {}).get("parameters", {}).get("properties", {})
    for e in entry.get("config", {}).get("env", []):
        value = e.get("value", "")
        if not value.startswith("{{"):
            continue
        if not value.startswith("{{" + name + "."):
            errors.append(f"env {e['name']}: {value!r} names a parameter of another server")
        elif value[len(name) + 3:].rstrip("}") not in params:
            errors.append(f"env {e['name']}: {value!r} names no parameter of config.parameters")
    for req in entry.get("config", {}).get("parameters", {}).get("required", []):
        if req not in params:
            errors.append(f"config.parameters.required names {req!r}, which is not a property")
    return errors


CATALOG = ROOT / "packaging/docker-mcp/server.yaml"
ENTRY = yaml.safe_load(CATALOG.read_text())


@check("packaging/docker-mcp/server.yaml has the fields and rules of Docker's MCP catalog")
def _():
    errors = catalog_errors(ENTRY)
    assert not errors, errors
    # The entry serves the image the repository builds, with the server's settings.
    env = {e["name"] for e in ENTRY["config"]["env"]} | {s["env"] for s in ENTRY["config"]["secrets"]}
    assert {"ARCANE_URL", "ARCANE_API_KEY"} <= env, env


@check("the catalog check refuses an entry with an unknown field, an unpinned commit, a stray parameter")
def _():
    broken = copy.deepcopy(ENTRY)
    broken["about"]["summary"] = "not a field"
    errors = catalog_errors(broken)
    assert errors == ["server.yaml.about.summary: not a field of the catalog's format"], errors
    broken = copy.deepcopy(ENTRY)
    broken["source"]["commit"] = "main"
    broken["config"]["env"][0]["value"] = "{{arcane.nowhere}}"
    errors = catalog_errors(broken)
    assert any("source.commit" in e for e in errors) and any("nowhere" in e for e in errors), errors


@check("packaging/docker-mcp/server.yaml is formatted as the catalog's prettier --check wants")
def _():
    out = subprocess.run([sys.argv[1], "--check", str(CATALOG)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


failed = checks.summary()
sys.exit(1 if failed else 0)
