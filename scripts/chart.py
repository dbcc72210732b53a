"""Lint, render, validate and package the Helm chart without a helm binary or a cluster.

    python scripts/chart.py check   charts/arcane-mcp
    python scripts/chart.py package charts/arcane-mcp OUTDIR     (check, then package)

Helm's own engine does the work (helm-python-sdk: Helm's Go SDK behind a C ABI, from PyPI,
pinned in scripts/dist-tools.txt), so `helm lint`, `helm template` and `helm package` behave
as the helm binary does. Every rendered manifest of a built-in kind is validated, strictly
(no unknown field), against the Kubernetes API's JSON schemas of kubernetes-validate, for the
oldest and the newest Kubernetes the chart claims. The ServiceMonitor is a prometheus-operator
CRD whose schema no package here ships: it is checked for the fields the chart relies on.
"""

from __future__ import annotations

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
    "ServiceMonitor without a token": (
        {**BASE, "metrics": {"serviceMonitor": {"enabled": True}}},
        "bearerTokenSecret.name is required",
    ),
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


def check_deployment(doc: dict, case: str) -> None:
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
                    check_deployment(doc, case)
            print(f"rendered '{case}': {', '.join(kinds)}; valid against Kubernetes {' and '.join(KUBE_VERSIONS)}")
        for case, (values, words) in REFUSED.items():
            try:
                render(chart, values)
            except helm.HelmError as e:
                if words not in str(e):
                    fail(f"'{case}' was refused, but not with '{words}': {e}")
                continue
            fail(f"'{case}' rendered; the chart must refuse it")
        print(f"refused, with the reason: {', '.join(REFUSED)}")


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
