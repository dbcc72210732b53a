"""The official MCP Python SDK's OAuth client (`mcp.client.auth`) against `arcane-mcp --transport
http`, over its Streamable HTTP client: the SDK's own machinery finds the protected-resource
metadata (RFC 9728) from the 401, the authorization server's metadata (RFC 8414 / OpenID
discovery), registers (RFC 7591), sends the person to sign in, exchanges the code with PKCE,
calls, and refreshes.

Usage:
  python3 oauth_client.py self URL SIM_URL
      `--oauth-issuer self` at URL (the server's base): alice signs in with her password on the
      server's own page (its form posted as a browser would: hidden fields, CSRF cookie, Origin).
      Then her key is deleted in Arcane (the simulator at SIM_URL): the next refresh is refused
      and the SDK sends her to sign in again.
  python3 oauth_client.py idp URL ISSUER
      resource-server mode at URL with oidc-provider (tests/oidc/provider.mjs) at ISSUER: the
      client-credentials provider of the SDK (client `ci`), then the authorization-code flow,
      registered at the provider, signed in on its development pages as `alice`.

Prints one JSON object: `problems` (empty when all went as it should), `steps` done, and the
requests the SDK made (method, path, status). Run by tests/e2e_oauth_self.rs and tests/e2e_oauth.rs.
"""

import asyncio
import html
import json
import re
import sys
import time
from urllib.parse import parse_qs, urljoin, urlparse

import httpx
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

# Never opened: the SDK only needs a URL to name in the request; the code is taken from the
# sign-in's last redirect before anything would follow it.
REDIRECT = "http://127.0.0.1:9/callback"
# A guard against a hang, not a timing assertion.
GUARD = 120

problems = []
# The origins the report names: "server" and "provider".
ORIGINS = {}
report = {"problems": problems, "steps": [], "requests": []}


def check(ok, what):
    if not ok:
        problems.append(what)
    return ok


class Memory(TokenStorage):
    def __init__(self):
        self.tokens = None
        self.client = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def http_with(auth, who):
    """The httpx client the SDK's transport uses, every request it sends logged."""

    async def logged(response):
        u = response.request.url
        origin = f"{u.scheme}://{u.netloc.decode()}"
        seen = {
            "who": who,
            "origin": ORIGINS.get(origin, origin),
            "method": response.request.method,
            "path": u.path,
            "status": response.status_code,
        }
        if u.path.endswith("/token") and response.status_code != 200:
            # What the person would be told.
            await response.aread()
            body = response.json()
            seen["error"], seen["description"] = body.get("error"), body.get("error_description")
        report["requests"].append(seen)

    return httpx.AsyncClient(auth=auth, timeout=30, event_hooks={"response": [logged]})


def text_of(result):
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")


async def session_calls(url, http):
    """Lists the tools and calls container.list: (tool count, text of the call)."""
    async with streamable_http_client(url, http_client=http) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            result = await session.call_tool("arcane_execute_action", {"action": "container.list", "params": {}})
            return len(tools.tools), ("error: " if result.isError else "") + text_of(result)


class Browser:
    """Just enough of a browser for a sign-in: cookies (by name, each origin its own), redirects
    followed by hand so that the one to the client's redirect URI is caught, forms posted with
    the Origin a browser sends."""

    def __init__(self):
        self.http = httpx.AsyncClient(timeout=30, follow_redirects=False)
        self.jar = {}

    async def go(self, method, url, form=None):
        origin = "{0.scheme}://{0.netloc}".format(urlparse(url))
        cookies = "; ".join(f"{k}={v}" for k, v in self.jar.get(origin, {}).items())
        headers = {"cookie": cookies} if cookies else {}
        if form is not None:
            headers["origin"] = origin
        r = await self.http.request(method, url, data=form, headers=headers)
        for c in r.headers.get_list("set-cookie"):
            name, _, value = c.split(";", 1)[0].partition("=")
            self.jar.setdefault(origin, {})[name.strip()] = value.strip()
        return r

    async def sign_in(self, url, answer):
        """Visits the authorization URL, answers each page with `answer(html)` (the fields to post
        to the page's form) and follows redirects until one goes to the redirect URI: its query."""
        method, form = "GET", None
        for _ in range(20):
            r = await self.go(method, url, form)
            if r.status_code in (302, 303):
                url = urljoin(url, r.headers["location"])
                if url.startswith(REDIRECT):
                    return {k: v[0] for k, v in parse_qs(urlparse(url).query).items()}
                method, form = "GET", None
                continue
            page = r.text
            fields = answer(page)
            if fields is None:
                raise RuntimeError(f"an unexpected page ({r.status_code}): {page[:600]}")
            action = re.search(r'<form[^>]*action="([^"]*)"', page)
            url = urljoin(url, html.unescape(action.group(1))) if action else url
            method, form = "POST", fields
        raise RuntimeError("the sign-in did not end at the redirect URI")


def hidden(page, name):
    m = re.search(rf'name="{name}" value="([^"]*)"', page)
    return html.unescape(m.group(1)) if m else None


def auth_code_provider(url, name, browser, answer, sent_to):
    """The SDK's OAuthClientProvider whose redirect handler hands the authorization URL to the
    `browser` and whose callback handler gives back what the sign-in redirected with."""
    storage = Memory()
    landed = {}

    async def redirect_handler(authorization_url):
        sent_to.append(authorization_url)
        landed.clear()
        landed.update(await browser.sign_in(authorization_url, answer))

    async def callback_handler():
        return landed.get("code"), landed.get("state")

    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name=name,
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
        timeout=GUARD,
    )
    return provider, storage, landed


async def auth_code_flow(url, who, answer, issuer):
    """Discovery, registration, the sign-in, the code exchange, calls, then a refresh."""
    browser = Browser()
    sent_to = []
    provider, storage, landed = auth_code_provider(url, f"python-sdk-{who}", browser, answer, sent_to)
    tools, text = await session_calls(url, http_with(provider, who))
    ctx = provider.context
    check(ctx.protected_resource_metadata is not None, f"{who}: the protected-resource metadata was read")
    # The SDK drops metadata it cannot parse and guesses the endpoints instead: it must have
    # understood the authorization server's document.
    check(ctx.oauth_metadata is not None, f"{who}: the authorization server's metadata was understood")
    report[f"{who}_resource"] = str(ctx.protected_resource_metadata.resource) if ctx.protected_resource_metadata else None
    report[f"{who}_scope"] = ctx.client_metadata.scope
    check(storage.client is not None and bool(storage.client.client_id), f"{who}: registered")
    check(len(sent_to) == 1, f"{who}: sent to sign in once ({len(sent_to)})")
    if sent_to:
        q = parse_qs(urlparse(sent_to[0]).query)
        report[f"{who}_authorization"] = {k: v[0] for k, v in q.items() if k not in ("code_challenge", "state", "client_id")}
        check(q.get("code_challenge_method") == ["S256"], f"{who}: PKCE S256")
    check(landed.get("iss") in (issuer, issuer.rstrip("/")), f"{who}: the issuer comes back (RFC 9207): {landed.get('iss')}")
    check(storage.tokens is not None and bool(storage.tokens.refresh_token), f"{who}: a refresh token")
    check(tools > 0, f"{who}: tools listed")
    check("web-1" in text, f"{who}: container.list answered: {text[:300]}")
    report["steps"].append(who)

    # The access token lapses (the SDK goes by `expires_in`): its next request refreshes first.
    before = storage.tokens.refresh_token if storage.tokens else None
    access_before = storage.tokens.access_token if storage.tokens else None
    ctx.token_expiry_time = time.time() - 1
    _, text = await session_calls(url, http_with(provider, who))
    check("web-1" in text, f"{who}: calls go on after a refresh: {text[:300]}")
    check(storage.tokens.access_token != access_before, f"{who}: a new access token")
    report[f"{who}_refresh_rotated"] = storage.tokens.refresh_token != before
    check(len(sent_to) == 1, f"{who}: the refresh did not send the person to sign in again")
    report["steps"].append(f"{who} refreshed")
    return provider, storage, sent_to


async def self_mode(base, sim):
    def answer(page):
        if hidden(page, "form") is None:
            return None
        report.setdefault("pages", 0)
        report["pages"] += 1
        return {
            "form": hidden(page, "form"),
            "csrf": hidden(page, "csrf"),
            "method": "password",
            "username": "alice",
            "password": "alice-password",
            "access": "write",
        }

    url = f"{base}/mcp"
    provider, storage, sent_to = await auth_code_flow(url, "alice", answer, base)

    # Her key deleted in Arcane, from a signed-in session of hers (as she would in its UI).
    async with httpx.AsyncClient(timeout=30) as sim_http:
        login = (await sim_http.post(f"{sim}/api/auth/login", json={"username": "alice", "password": "alice-password"})).json()
        auth = {"authorization": f"Bearer {login['data']['token']}"}
        keys = (await sim_http.get(f"{sim}/api/auth/me/api-keys", headers=auth)).json()["data"]
        for k in keys:
            await sim_http.delete(f"{sim}/api/auth/me/api-keys/{k['id']}", headers=auth)
    report["deleted"] = [k["name"] for k in keys]
    # At the next refresh the server asks Arcane, which refuses the key: the refresh says to
    # sign in again, and the SDK does (a new page, a new key), then calls go on.
    provider.context.token_expiry_time = time.time() - 1
    _, text = await session_calls(url, http_with(provider, "alice again"))
    check(len(sent_to) == 2, f"alice: sent to sign in again after the key's deletion ({len(sent_to)})")
    check("web-1" in text, f"alice: calls go on after signing in again: {text[:300]}")
    report["steps"].append("alice signed in again")


async def idp_mode(base, issuer):
    url = f"{base}/mcp"
    # Client credentials: the SDK's provider for a client the provider knows (no registration).
    storage = Memory()
    provider = ClientCredentialsOAuthProvider(
        server_url=url, storage=storage, client_id="ci", client_secret="ci-secret"
    )
    tools, text = await session_calls(url, http_with(provider, "ci"))
    check(provider.context.oauth_metadata is not None, "ci: the provider's metadata was understood")
    report["ci_scope"] = provider.context.client_metadata.scope
    check(storage.tokens is not None, "ci: a token")
    check(tools > 0 and "web-1" in text, f"ci: calls answered: {text[:300]}")
    report["steps"].append("ci")

    # The authorization-code flow: registered at the provider, signed in on its pages.
    def answer(page):
        prompt = hidden(page, "prompt")
        report.setdefault("provider_pages", []).append(prompt)
        if prompt == "login":
            return {"prompt": "login", "login": "alice", "password": "any"}
        if prompt == "consent":
            return {"prompt": "consent"}
        return None

    await auth_code_flow(url, "alice", answer, issuer)


def describe(e):
    """An exception, the ones inside an exception group (anyio's task groups raise those) too."""
    inner = getattr(e, "exceptions", None)
    if inner:
        return "; ".join(describe(x) for x in inner)
    return f"{type(e).__name__}: {e}"


async def main():
    mode = sys.argv[1]
    ORIGINS[sys.argv[2]] = "server"
    if len(sys.argv) > 3:
        ORIGINS["{0.scheme}://{0.netloc}".format(urlparse(sys.argv[3]))] = "provider"
    try:
        if mode == "self":
            await asyncio.wait_for(self_mode(sys.argv[2], sys.argv[3]), GUARD)
        else:
            await asyncio.wait_for(idp_mode(sys.argv[2], sys.argv[3]), GUARD)
    except BaseException as e:  # noqa: BLE001 - everything goes into the report
        problems.append(f"failed: {describe(e)}")
    print(json.dumps(report))


asyncio.run(main())
