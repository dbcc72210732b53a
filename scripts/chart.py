"""Lint, render, validate and package the Helm chart without a helm binary or a cluster.

    python scripts/chart.py check   charts/arcane-mcp
    python scripts/chart.py package charts/arcane-mcp OUTDIR     (check, then package)

Helm's own engine does the work (helm-python-sdk: Helm's Go SDK behind a C ABI, from PyPI,
pinned in scripts/dist-tools.txt), so `helm lint`, `helm template` and `helm package` behave
as the helm binary does. Every rendered manifest of a built-in kind is validated, strictly
(no unknown field), against the Kubernetes API's JSON schemas of kubernetes-validate, for the
oldest and the newest Kubernetes the chart claims. The ServiceMonitor, a prometheus-operator
custom resource, is validated against prometheus-operator's monitoring.coreos.com/v1 API types
(scripts/validate-servicemonitor.mjs, with the npm tools of scripts/dist-tools-npm/ found in
DIST_TOOLS_NPM) and checked for the fields the chart relies on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import helm_python as helm
import kubernetes_validate
import yaml

# The oldest Kubernetes of Chart.yaml's kubeVersion, and the newest the schemas know.
KUBE_VERSIONS = ["1.25.0", "1.37.0"]

BASE = {
    "arcane": {"url": "https://arcane.example.com", "apiKeySecret": {"name": "arcane-api-key"}},
    "auth": {"tokensSecret": {"name": "arcane-mcp-tokens"}},
}

# Value sets rendered and validated: the least an operator writes, and everything on.
CASES = {
    "minimal": BASE,
    "everything": {
        **BASE,
        "replicaCount": 2,
        "stateKeySecret": {"name": "arcane-mcp-state-key"},
        "arcane": {
            "url": "https://arcane.example.com",
            "keySource": "either",
            "apiKeySecret": {"name": "arcane-api-key", "key": "key"},
            "caCertSecret": {"name": "arcane-ca"},
        },
        "allowedHosts": ["mcp.internal"],
        "allowedOrigins": ["https://app.example.com"],
        "extraEnv": {"ARCANE_MCP_READ_ONLY": True, "ARCANE_MCP_TOOL_SURFACE": "meta"},
        "auditLog": {"enabled": True, "existingClaim": "arcane-mcp-audit", "maxBytes": "10485760"},
        "ingress": {
            "enabled": True,
            "className": "nginx",
            "hosts": [{"host": "mcp.example.com", "paths": [{"path": "/", "pathType": "Prefix"}]}],
            "tls": [{"secretName": "mcp-tls", "hosts": ["mcp.example.com"]}],
        },
        "metrics": {"serviceMonitor": {"enabled": True, "bearerTokenSecret": {"name": "metrics-token"}}},
    },
    "client-keys": {
        "arcane": {"url": "http://arcane:3552", "keySource": "client"},
        "auth": {"tokensSecret": {"name": "arcane-mcp-tokens"}},
    },
}

# Values the chart must refuse, with a word of the message that says what to do.
REFUSED = {
    "no Arcane URL": ({"auth": BASE["auth"]}, "arcane.url is required"),
    "no token Secret": ({"arcane": BASE["arcane"]}, "auth.tokensSecret.name is required"),
    "server key without a Secret": (
        {"arcane": {"url": "https://a.example"}, "auth": BASE["auth"]},
        "arcane.apiKeySecret.name is required",
    ),
    "unknown key source": (
        {**BASE, "arcane": {**BASE["arcane"], "keySource": "nobody"}},
        "arcane.keySource must be",
    ),
    "a secret in extraEnv": ({**BASE, "extraEnv": {"ARCANE_API_KEY": "arc_x"}}, "only ARCANE_MCP_"),
    "two replicas without a shared state key": ({**BASE, "replicaCount": 2}, "stateKeySecret.name is empty"),
    "ServiceMonitor without a token": (
        {**BASE, "metrics": {"serviceMonitor": {"enabled": True}}},
        "bearerTokenSecret.name is required",
    ),
}


# Values that render, but into a ServiceMonitor prometheus-operator's types refuse: the
# validator is shown to catch what it must.
SERVICE_MONITOR_REFUSED = {
    **BASE,
    "metrics": {"serviceMonitor": {"enabled": True, "interval": "every minute", "bearerTokenSecret": {"name": "t"}}},
}


def fail(message: str) -> None:
    print(f"chart.py: {message}", file=sys.stderr)
    sys.exit(1)


def render(chart: helm.Chart, values: dict) -> list[dict]:
    out = chart.render(values=values, name="arcane-mcp", namespace="tools", is_install=True)
    docs = []
    for template, text in sorted(out.items()):
        if template.endswith("NOTES.txt"):
            continue
        for doc in yaml.safe_load_all(text):
            if doc:
                docs.append(doc)
    return docs


def check_service_monitor(doc: dict) -> None:
    spec = doc.get("spec", {})
    endpoint = (spec.get("endpoints") or [{}])[0]
    ok = (
        doc.get("apiVersion") == "monitoring.coreos.com/v1"
        and spec.get("selector", {}).get("matchLabels")
        and endpoint.get("port") == "http"
        and endpoint.get("path") == "/metrics"
        and endpoint.get("authorization", {}).get("credentials", {}).get("name")
    )
    if not ok:
        fail(f"the ServiceMonitor lacks a field Prometheus needs: {doc}")


def service_monitors_valid(docs: list[dict]) -> tuple[bool, str]:
    """prometheus-operator's API types on the ServiceMonitors: (valid, what the validator said)."""
    tools = os.environ.get("DIST_TOOLS_NPM")
    if not tools:
        fail("DIST_TOOLS_NPM is not set: run through scripts/dist.sh or scripts/test-dist.sh, which install the npm tools")
    script = Path(__file__).with_name("validate-servicemonitor.mjs")
    out = subprocess.run(["node", str(script), tools], input=json.dumps(docs), capture_output=True, text=True, timeout=120)
    return out.returncode == 0, (out.stdout + out.stderr).strip()


def check_deployment(doc: dict, case: str, values: dict) -> None:
    pod = doc["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    sc, psc = container["securityContext"], pod["securityContext"]
    if not (psc.get("runAsNonRoot") and psc.get("runAsUser") == 65532):
        fail(f"{case}: the pod must run as the image's non-root user 65532")
    if not sc.get("readOnlyRootFilesystem") or sc.get("allowPrivilegeEscalation") is not False:
        fail(f"{case}: the container must have a read-only root FS and no privilege escalation")
    if container["readinessProbe"]["httpGet"]["path"] != "/readyz":
        fail(f"{case}: the readiness probe must ask /readyz")
    if container["livenessProbe"]["httpGet"]["path"] != "/healthz":
        fail(f"{case}: the liveness probe must ask /healthz")
    env = {e["name"]: e for e in container["env"]}
    # Secrets reach the pod only by reference: no env var of a secret carries a value.
    for name in ("ARCANE_API_KEY", "ARCANE_MCP_AUTH_TOKEN", "ARCANE_TOKEN"):
        if name in env and "value" in env[name]:
            fail(f"{case}: {name} is written in the manifest; it must come from a Secret")
    hosts = env["ARCANE_MCP_ALLOWED_HOSTS"]["value"].split(",")
    # The kubelet's probes and Prometheus send the pod IP as Host: without it they get 403.
    if "$(POD_IP)" not in hosts or list(env).index("POD_IP") > list(env).index("ARCANE_MCP_ALLOWED_HOSTS"):
        fail(f"{case}: ARCANE_MCP_ALLOWED_HOSTS must include $(POD_IP), defined before it")
    # Replicas share the state key, from its Secret, never as a value.
    if values.get("replicaCount", 1) > 1:
        key_file = env.get("ARCANE_MCP_STATE_KEY_FILE", {}).get("value", "")
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        volumes = {v["name"]: v for v in pod["volumes"]}
        volume = volumes.get(mounts.get(os.path.dirname(key_file), ""), {})
        secret = volume.get("secret", {}).get("secretName")
        if secret != values["stateKeySecret"]["name"]:
            fail(f"{case}: {doc['spec']['replicas']} replicas, but the state key file is not the stateKeySecret's")


def check(chart_dir: str) -> None:
    report = helm.lint(chart_dir, BASE, strict=True, kube_version="v" + KUBE_VERSIONS[0])
    problems = [m for m in report.get("messages", []) if m.get("severity", 0) >= 2] + report.get("errors", [])
    if problems:
        fail(f"helm lint --strict: {problems}")
    print(f"helm lint --strict: {chart_dir} clean")
    with helm.Chart.load(chart_dir) as chart:
        for case, values in CASES.items():
            docs = render(chart, values)
            kinds = sorted(d["kind"] for d in docs)
            monitors = [d for d in docs if d["kind"] == "ServiceMonitor"]
            if monitors:
                ok, said = service_monitors_valid(monitors)
                if not ok:
                    fail(f"{case}: {said}")
            for doc in docs:
                if doc["kind"] == "ServiceMonitor":
                    check_service_monitor(doc)
                    continue
                for version in KUBE_VERSIONS:
                    try:
                        kubernetes_validate.validate(doc, version, strict=True)
                    except kubernetes_validate.ValidationError as e:
                        fail(f"{case}: {doc['kind']} is not valid Kubernetes {version}: {e.message} at {list(e.path)}")
                if doc["kind"] == "Deployment":
                    check_deployment(doc, case, values)
            valid = f"Kubernetes {' and '.join(KUBE_VERSIONS)}" + (", prometheus-operator v1" if monitors else "")
            print(f"rendered '{case}': {', '.join(kinds)}; valid against {valid}")
        for case, (values, words) in REFUSED.items():
            try:
                render(chart, values)
            except helm.HelmError as e:
                if words not in str(e):
                    fail(f"'{case}' was refused, but not with '{words}': {e}")
                continue
            fail(f"'{case}' rendered; the chart must refuse it")
        print(f"refused, with the reason: {', '.join(REFUSED)}")
        monitors = [d for d in render(chart, SERVICE_MONITOR_REFUSED) if d["kind"] == "ServiceMonitor"]
        ok, said = service_monitors_valid(monitors)
        if ok or "interval" not in said:
            fail(f"a ServiceMonitor scraping 'every minute' passed prometheus-operator's types: {said}")
        print("refused by prometheus-operator's types: a ServiceMonitor interval of 'every minute'")


def main() -> None:
    if len(sys.argv) < 3 or sys.argv[1] not in ("check", "package"):
        fail("usage: chart.py check CHART_DIR | chart.py package CHART_DIR OUTDIR")
    chart_dir = sys.argv[2]
    check(chart_dir)
    if sys.argv[1] == "package":
        out = Path(sys.argv[3])
        out.mkdir(parents=True, exist_ok=True)
        print("packaged:", helm.package(chart_dir, destination=str(out)))


if __name__ == "__main__":
    main()
