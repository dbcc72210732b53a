#!/usr/bin/env python3
"""Before a release publishes anything: is every package name ours, or still free?

A name held by another project would have `uvx`/`npx` install a stranger's code into a process
holding ARCANE_API_KEY (`arcane-mcp` on PyPI is an unrelated project: ours is
`arcane-mcp-server`). Each name the packaging files publish under — PyPI's project, npm's
launcher and its platform packages — is looked up in its registry: free (404) is fine (the
first publish claims it), taken is fine only when the package's own metadata points at our
repository (Cargo.toml's `repository`). Anything else stops the release, naming the package.

  python3 scripts/check-names.py            # the real registries
  PYPI_URL=http://127.0.0.1:PORT NPM_REGISTRY=http://127.0.0.1:PORT python3 scripts/check-names.py

Exit status: 0 every name is ours or free, 1 one is not (or a registry could not be read).
"""

import json
import os
import pathlib
import re
import sys
import tomllib
import urllib.error
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
PYPI = os.environ.get("PYPI_URL", "https://pypi.org").rstrip("/")
NPM = os.environ.get("NPM_REGISTRY", "https://registry.npmjs.org").rstrip("/")


def ours() -> str:
    cargo = tomllib.loads((ROOT / "Cargo.toml").read_text())
    return cargo["workspace"]["package"]["repository"].rstrip("/")


def fetch(url: str):
    """The JSON at `url`, or None for a 404."""
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise


def normal(url: str) -> str:
    """`git+https://github.com/o/r.git` → `github.com/o/r`: one spelling of a repository URL."""
    url = url.strip().lower().removeprefix("git+")
    url = re.sub(r"^[a-z]+://", "", url).removesuffix("/").removesuffix(".git")
    return url


def claimed_repos(registry: str, doc) -> list[str]:
    """The repository URLs a package's own metadata declares (not its free text: a stranger's
    README can name any repository)."""
    if registry == "PyPI":
        info = doc.get("info") or {}
        urls = list((info.get("project_urls") or {}).values())
        return [u for u in [*urls, info.get("home_page") or ""] if u]
    repo = doc.get("repository") or {}
    url = repo.get("url") if isinstance(repo, dict) else repo
    return [url] if isinstance(url, str) else []


def main() -> int:
    repo = ours()
    pypi_name = tomllib.loads((ROOT / "packaging/pypi/pyproject.toml").read_text())["project"]["name"]
    npm_pkg = json.loads((ROOT / "packaging/npm/arcane-mcp-server/package.json").read_text())
    names = [("PyPI", pypi_name, f"{PYPI}/pypi/{pypi_name}/json")]
    for name in [npm_pkg["name"], *npm_pkg.get("optionalDependencies", {})]:
        names.append(("npm", name, f"{NPM}/{name.replace('/', '%2F')}"))
    bad = 0
    for registry, name, url in names:
        try:
            doc = fetch(url)
        except (OSError, ValueError) as e:
            print(f"{registry} {name}: could not be read ({e}); not publishing blind", file=sys.stderr)
            bad += 1
            continue
        if doc is None:
            print(f"{registry} {name}: free (this release claims it)")
        elif normal(repo) in {normal(u) for u in claimed_repos(registry, doc)}:
            print(f"{registry} {name}: ours")
        else:
            print(
                f"{registry} {name}: taken by another project (its metadata does not name {repo}); "
                "choose another name in the packaging files before publishing",
                file=sys.stderr,
            )
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
