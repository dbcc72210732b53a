// The MCP TypeScript SDK's OAuth client against `arcane-mcp` in resource-server mode, with
// oidc-provider (tests/oidc/provider.mjs) as the identity provider (tests/e2e_oauth.rs runs it). The
// SDK's own machinery does the discovery from the 401 — our protected-resource metadata
// (RFC 9728), then the provider's metadata — and asks the provider for a token for our resource
// (RFC 8707 `resource`):
//   1. its ClientCredentialsProvider (auth-extensions) for the provider's client `ci`;
//   2. the authorization-code flow: it registers at the provider (RFC 7591), is sent to the
//      provider's sign-in (its development pages, posted here as a browser would: login
//      `alice`, then consent), exchanges the code with PKCE, calls, and refreshes.
//
//   node oauth_idp.mjs idp URL ISSUER      URL the server's base; prints one JSON report
// (`idp` names the mode as tests/python/oauth_client.py's first argument does; the
// `--oauth-issuer self` side is tests/browser/oauth.mjs).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { ClientCredentialsProvider } from "@modelcontextprotocol/sdk/client/auth-extensions.js";

const [mode, BASE, ISSUER] = process.argv.slice(2);
if (mode !== "idp" || !BASE || !ISSUER) {
  console.error("usage: node oauth_idp.mjs idp URL ISSUER");
  process.exit(2);
}
const MCP = new URL(`${BASE}/mcp`);
// Never opened: the code is taken from the sign-in's last redirect before anything follows it.
const REDIRECT = "http://127.0.0.1:9/callback";
const WAIT = 30_000;
const problems = [];
const report = { problems, steps: [], requests: [] };
const check = (ok, what) => { if (!ok) problems.push(what); return ok; };
const watchdog = setTimeout(() => {
  problems.push("the run did not finish within 120 s");
  console.log(JSON.stringify(report));
  process.exit(1);
}, 120_000);
watchdog.unref();

/// The fetch the SDK uses, every request logged (method, where, status).
const logged = (who) => async (url, init) => {
  const res = await fetch(url, { ...init, signal: init?.signal ?? AbortSignal.timeout(WAIT) });
  const u = new URL(String(url));
  report.requests.push({ who, method: init?.method ?? "GET", origin: u.origin === new URL(ISSUER).origin ? "provider" : u.origin === BASE ? "server" : u.origin, path: u.pathname, status: res.status });
  return res;
};

async function connect(authProvider, who) {
  const transport = new StreamableHTTPClientTransport(MCP, { authProvider, fetch: logged(who) });
  const client = new Client({ name: `typescript-sdk-${who}`, version: "1.0.0" });
  await client.connect(transport);
  return client;
}

async function calls(client) {
  const tools = await client.listTools();
  const r = await client.callTool({ name: "arcane_execute_action", arguments: { action: "container.list", params: {} } });
  const text = (r.isError ? "error: " : "") + (r.content?.map((c) => c.text ?? "").join("\n") ?? "");
  await client.close();
  return { tools: tools.tools.length, text };
}

/// Just enough of a browser for the provider's sign-in: cookies by name, redirects followed by
/// hand until one goes to the redirect URI (its query is returned), each page answered by
/// `answer(html)` with the fields to post to its form.
async function signIn(start, answer) {
  const jar = new Map();
  let url = start;
  let method = "GET";
  let body;
  for (let i = 0; i < 20; i += 1) {
    const headers = { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join("; ") };
    if (body) { headers["content-type"] = "application/x-www-form-urlencoded"; headers.origin = new URL(url).origin; }
    const res = await fetch(url, { method, headers, body, redirect: "manual", signal: AbortSignal.timeout(WAIT) });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(";");
      const at = pair.indexOf("=");
      jar.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
    }
    if (res.status === 302 || res.status === 303) {
      url = new URL(res.headers.get("location"), url).href;
      if (url.startsWith(REDIRECT)) return Object.fromEntries(new URL(url).searchParams);
      method = "GET"; body = undefined;
      continue;
    }
    const page = await res.text();
    const fields = answer(page);
    if (!fields) throw new Error(`an unexpected page (${res.status}): ${page.slice(0, 600)}`);
    const action = page.match(/<form[^>]*action="([^"]*)"/);
    if (action) url = new URL(action[1].replaceAll("&amp;", "&"), url).href;
    method = "POST"; body = new URLSearchParams(fields).toString();
  }
  throw new Error("the sign-in did not end at the redirect URI");
}

const hidden = (page, name) => page.match(new RegExp(`name="${name}" value="([^"]*)"`))?.[1];

try {
  // 1. Client credentials.
  const ci = new ClientCredentialsProvider({
    clientId: "ci", clientSecret: "ci-secret", expectedIssuer: ISSUER,
    // The provider's token request carries `provider.clientMetadata.scope` only: this SDK does
    // not take the scope of the server's challenge for this grant (it does for the others).
    scope: "arcane:read arcane:write",
  });
  const c = await calls(await connect(ci, "ci"));
  check(c.tools > 0 && c.text.includes("web-1"), `ci: calls answered: ${c.text.slice(0, 300)}`);
  check(ci.tokens()?.access_token?.split(".").length === 3, "ci: a JWT access token from the provider");
  report.steps.push("ci");

  // 2. The authorization-code flow, with dynamic registration at the provider.
  const p = {
    info: undefined, saved: undefined, verifier: undefined, pending: [],
    get redirectUrl() { return REDIRECT; },
    get clientMetadata() {
      return { client_name: "typescript-sdk", redirect_uris: [REDIRECT], grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"], token_endpoint_auth_method: "none" };
    },
    state() { return "state-ts"; },
    clientInformation() { return p.info; },
    saveClientInformation(i) { p.info = i; },
    tokens() { return p.saved; },
    saveTokens(t) { p.saved = t; },
    redirectToAuthorization(url) { p.pending.push(url); },
    saveCodeVerifier(v) { p.verifier = v; },
    codeVerifier() { return p.verifier; },
    invalidateCredentials(scope) { if (scope === "all" || scope === "tokens") p.saved = undefined; },
  };
  let refused = false;
  try { await connect(p, "alice"); } catch (e) { refused = e instanceof UnauthorizedError; if (!refused) throw e; }
  check(refused, "alice: the first connection asks to sign in");
  check(p.info?.client_id && p.info.client_id !== "ci", "alice: registered at the provider");
  if (check(p.pending.length === 1, `alice: sent to sign in once (${p.pending.length})`)) {
    const asked = new URL(p.pending[0]);
    check(asked.href.startsWith(`${ISSUER}/`), `alice: sent to the provider (${asked.origin})`);
    check(asked.searchParams.get("code_challenge_method") === "S256", "alice: PKCE S256");
    report.alice_authorization = { resource: asked.searchParams.get("resource"), scope: asked.searchParams.get("scope") };
    const pages = [];
    const back = await signIn(asked.href, (page) => {
      const prompt = hidden(page, "prompt");
      pages.push(prompt);
      if (prompt === "login") return { prompt: "login", login: "alice", password: "any" };
      if (prompt === "consent") return { prompt: "consent" };
      return null;
    });
    report.provider_pages = pages;
    check(back.state === "state-ts", "alice: the state comes back");
    check(back.iss === ISSUER, `alice: the issuer comes back (RFC 9207): ${back.iss}`);
    await new StreamableHTTPClientTransport(MCP, { authProvider: p, fetch: logged("alice") }).finishAuth(back.code);
    check(p.saved?.refresh_token, "alice: a refresh token");
    const a = await calls(await connect(p, "alice"));
    check(a.tools > 0 && a.text.includes("web-1"), `alice: calls answered: ${a.text.slice(0, 300)}`);
    report.steps.push("alice");

    // The access token no longer good: the 401 makes the SDK refresh and go on.
    const before = p.saved.access_token;
    p.saved = { ...p.saved, access_token: "not-a-token-any-more" };
    const b = await calls(await connect(p, "alice"));
    check(b.text.includes("web-1"), `alice: calls go on after a refresh: ${b.text.slice(0, 300)}`);
    check(p.saved.access_token !== before && p.saved.access_token.split(".").length === 3, "alice: a new access token");
    check(p.pending.length === 1, "alice: the refresh did not send her to sign in again");
    report.steps.push("alice refreshed");
  }
} catch (e) {
  problems.push(`failed: ${e?.stack ?? e}`);
}
console.log(JSON.stringify(report));
process.exit(0);
