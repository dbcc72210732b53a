// "Sign in with your Arcane account" end to end (tests/e2e_oauth_self.rs runs it): the MCP
// TypeScript SDK's OAuth client against arcane-mcp --oauth-issuer self — discovery, dynamic
// registration, PKCE — with the sign-in page driven in Debian's Chromium (puppeteer-core), once
// with a password and once with a pasted API key; then calls, a refresh, the key deleted in
// Arcane ("sign in again"), and revocation.
//
//   node oauth.mjs            prints one JSON report
//
// Environment: ARCANE_MCP_URL (the server's base), ARCANE_SIM_URL (the simulator, whose
// sign-in deletes the key), CHROMIUM (default /usr/bin/chromium).
import http from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import puppeteer from "puppeteer-core";

const BASE = process.env.ARCANE_MCP_URL;
const SIM = process.env.ARCANE_SIM_URL;
const WAIT = 60_000;
const problems = [];
const report = { problems, steps: [], tokenAnswers: [] };
const check = (ok, what) => { if (!ok) problems.push(what); return ok; };
const watchdog = setTimeout(() => {
  problems.push("the run did not finish within 240 s");
  console.log(JSON.stringify(report));
  process.exit(1);
}, 240_000);
watchdog.unref();

// The redirect URI: a loopback server that takes the code (RFC 8252 §7.3).
const codes = [];
let waiting = null;
const callback = http.createServer((req, res) => {
  const u = new URL(req.url, "http://127.0.0.1");
  // Only the redirect itself (the browser asks for /favicon.ico too).
  if (u.pathname !== "/callback") { res.writeHead(404).end(); return; }
  codes.push(Object.fromEntries(u.searchParams));
  res.writeHead(200, { "content-type": "text/plain" }).end("signed in; you can close this");
  waiting?.();
});
await new Promise((r) => callback.listen(0, "127.0.0.1", r));
const REDIRECT = `http://127.0.0.1:${callback.address().port}/callback`;

// Every answer of the token endpoint is kept (their error descriptions are what a person
// would be told).
const fetchLogged = async (url, init) => {
  report.phase = `fetch ${String(url).replace(BASE, "")}`;
  const res = await fetch(url, { ...init, signal: init?.signal ?? AbortSignal.timeout(WAIT) });
  if (String(url).endsWith("/token")) {
    const body = await res.clone().json().catch(() => null);
    const grant = new URLSearchParams(String(init?.body ?? "")).get("grant_type");
    report.tokenAnswers.push({ grant, status: res.status, error: body?.error, description: body?.error_description });
  }
  return res;
};

/// An OAuthClientProvider kept in memory; `pending` holds the authorization URL to visit.
function provider(name) {
  const p = {
    info: undefined, saved: undefined, verifier: undefined, pending: undefined,
    get redirectUrl() { return REDIRECT; },
    get clientMetadata() {
      return { client_name: name, redirect_uris: [REDIRECT], grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"], token_endpoint_auth_method: "none" };
    },
    state() { return `state-${name}`; },
    clientInformation() { return p.info; },
    saveClientInformation(i) { p.info = i; },
    tokens() { return p.saved; },
    saveTokens(t) { p.saved = t; },
    redirectToAuthorization(url) { p.pending = url; },
    saveCodeVerifier(v) { p.verifier = v; },
    codeVerifier() { return p.verifier; },
    invalidateCredentials(scope) { if (scope === "all" || scope === "tokens") p.saved = undefined; },
  };
  return p;
}

async function connect(p) {
  const transport = new StreamableHTTPClientTransport(new URL(`${BASE}/mcp`), { authProvider: p, fetch: fetchLogged });
  const client = new Client({ name: "oauth-browser-test", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport };
}

/// The first connection: refused, the SDK registers and asks for the page; the page is
/// answered in Chromium by `fill`; the code exchanged.
async function signIn(browser, p, fill) {
  let refused = false;
  try { await connect(p); } catch (e) { refused = e instanceof UnauthorizedError; }
  check(refused, `${p.clientMetadata.client_name}: the first connection asks to sign in`);
  if (!check(p.pending, "the SDK was sent to the sign-in page")) return null;
  const url = new URL(p.pending);
  check(url.searchParams.get("code_challenge_method") === "S256", "PKCE S256");
  check(url.searchParams.get("client_id")?.startsWith("amcp_c_"), "a registered client");
  report.phase = `${p.clientMetadata.client_name}: the page`;
  const page = await browser.newPage();
  const got = new Promise((r) => { waiting = r; });
  await page.goto(url.href, { waitUntil: "domcontentloaded", timeout: WAIT });
  const shown = await page.$eval("#client", (e) => e.textContent);
  check(shown === p.clientMetadata.client_name, `the page names the client (${shown})`);
  report.phase = `${p.clientMetadata.client_name}: filling the page`;
  await fill(page);
  report.phase = `${p.clientMetadata.client_name}: waiting for the redirect`;
  await Promise.race([got, new Promise((_, no) => setTimeout(() => no(new Error("no redirect")), WAIT))]);
  report.phase = `${p.clientMetadata.client_name}: redirected`;
  const answer = codes.at(-1);
  // Not awaited: the browser goes away at the end anyway.
  page.close().catch(() => {});
  check(answer.state === `state-${p.clientMetadata.client_name}`, "the state comes back");
  check(answer.iss === BASE, "the issuer comes back (RFC 9207)");
  p.pending = undefined;
  const t = new StreamableHTTPClientTransport(new URL(`${BASE}/mcp`), { authProvider: p, fetch: fetchLogged });
  await t.finishAuth(answer.code);
  check(p.saved?.access_token?.startsWith("amcp_at_"), "an access token");
  return connect(p);
}

async function list(client) {
  const r = await client.callTool({ name: "arcane_execute_action", arguments: { action: "container.list", params: {} } });
  return r.content?.map((c) => c.text ?? "").join("\n") ?? "";
}

/// Alice's keys deleted in Arcane, from a signed-in session of hers (as she would in its UI).
async function deleteAlicesKeys() {
  const login = await (await fetch(`${SIM}/api/auth/login`, { method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: "alice", password: "alice-password" }) })).json();
  const auth = { authorization: `Bearer ${login.data.token}` };
  const keys = (await (await fetch(`${SIM}/api/auth/me/api-keys`, { headers: auth })).json()).data;
  for (const k of keys) await fetch(`${SIM}/api/auth/me/api-keys/${k.id}`, { method: "DELETE", headers: auth });
  return keys.map((k) => k.name);
}

report.phase = "launching Chromium";
const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
});
try {
  // Alice signs in with her password.
  const alice = provider("Claude");
  const a = await signIn(browser, alice, async (page) => {
    await page.type("#username", "alice");
    await page.type("#password", "wrong-password");
    await Promise.all([page.waitForNavigation({ timeout: WAIT }), page.click("#sign-in")]);
    const message = await page.$eval("#message", (e) => e.textContent)
      .catch(async () => `no message on: ${(await page.content()).slice(0, 400)}`);
    check(message.includes("did not accept"), `a wrong password is told (${message})`);
    check((await page.$eval("#username", (e) => e.value)) === "alice", "the username is kept");
    await page.type("#password", "alice-password");
    await page.click("#sign-in");
  });
  if (a) {
    const text = await list(a.client);
    check(text.includes("web-1"), "alice lists containers");
    report.steps.push("alice");
    // The access token lapses: the SDK refreshes with the refresh token and goes on.
    const before = alice.saved.refresh_token;
    alice.saved = { ...alice.saved, access_token: "amcp_at_expired" };
    const b = await connect(alice);
    check((await list(b.client)).includes("web-1"), "calls go on after a refresh");
    check(alice.saved.refresh_token !== before, "the refresh token rotated");
    report.steps.push("refreshed");
    await b.client.close();
    // Her key deleted in Arcane: at the next refresh the server asks Arcane, which refuses
    // the key; the refresh says to sign in again and the SDK is back at the sign-in page.
    report.deleted = await deleteAlicesKeys();
    alice.saved = { ...alice.saved, access_token: "amcp_at_expired" };
    let refused = false;
    try { await connect(alice); } catch (e) { refused = e instanceof UnauthorizedError; report.deletedError = String(e); }
    check(refused, "after the key's deletion the SDK must sign in again");
    check(String(alice.pending ?? "").startsWith(`${BASE}/authorize`), "back to the sign-in page");
    report.steps.push("deleted");
    await a.client.close();
  }

  // Bob pastes an API key.
  const bob = provider("ChatGPT");
  const c = await signIn(browser, bob, async (page) => {
    await page.type("#api_key", "bob-key");
    await page.click("#use-key");
  });
  if (c) {
    check((await list(c.client)).includes("web-1"), "bob lists containers");
    report.steps.push("bob");
    await c.client.close();
    // Revocation (RFC 7009) of his refresh token ends the grant: the next connection must
    // sign in again.
    const meta = await (await fetch(`${BASE}/.well-known/oauth-authorization-server`)).json();
    const r = await fetch(meta.revocation_endpoint, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: bob.saved.refresh_token, client_id: bob.info.client_id }) });
    check(r.status === 200, "revocation answers 200");
    let refused = false;
    try { await connect(bob); } catch (e) { refused = e instanceof UnauthorizedError; }
    check(refused, "after revocation the SDK must sign in again");
    report.steps.push("revoked");
  }
} catch (e) {
  problems.push(`failed: ${e?.stack ?? e}`);
} finally {
  await browser.close();
  callback.close();
}
console.log(JSON.stringify(report));
process.exit(0);
