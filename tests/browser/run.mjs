// The MCP Apps view end to end (tests/e2e_apps.rs runs it): arcane-mcp against the simulator,
// driven by the MCP TypeScript SDK; the view in Debian's Chromium (puppeteer-core) inside a test
// host page built on the ext-apps SDK's AppBridge, served on loopback.
//
//   node run.mjs BINARY test              checks; prints one JSON report
//   node run.mjs BINARY screenshots DIR   writes the views' screenshots (scripts/app-screenshots.sh)
//
// Environment: ARCANE_SIM_URL, ARCANE_SIM_KEY (the simulator), ARCANE_SPEC (its document),
// ARCANE_HOSTILE (JSON array of the names planted in it), ARCANE_CACHE_DIR (optional catalog
// cache), CHROMIUM (default /usr/bin/chromium).
import { readFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import puppeteer from "puppeteer-core";

const here = dirname(fileURLToPath(import.meta.url));
const [binary, mode = "test", outDir] = process.argv.slice(2);
const SIM = process.env.ARCANE_SIM_URL;
const KEY = process.env.ARCANE_SIM_KEY;
const SPEC = process.env.ARCANE_SPEC;
const HOSTILE = JSON.parse(process.env.ARCANE_HOSTILE ?? "[]");
const EXT = "io.modelcontextprotocol/ui";
const MIME = "text/html;profile=mcp-app";
const URI = "ui://arcane/app";
// Hang guards, not timing goals: generous for a loaded CI machine.
const WAIT = 60_000;

const problems = [];
const report = { problems, views: {}, calls: {}, elicitations: [], ids: {} };
const check = (ok, what) => { if (!ok) problems.push(what); return ok; };
const started = Date.now();
const watchdog = setTimeout(() => {
  problems.push("the run did not finish within 300 s");
  console.log(JSON.stringify(report));
  process.exit(1);
}, 300_000);
watchdog.unref();

// ---- the server, through the TypeScript SDK -------------------------------------------------
const clients = [];
// `args` are more of the server's flags; the questions it asks are kept in `asked`.
async function connect(surface, { ui = true, apps = "on", answers = [], args = [], asked = report.elicitations } = {}) {
  const transport = new StdioClientTransport({
    command: binary,
    args: ["--arcane-url", SIM, "--api-key", KEY, "--spec", SPEC, "--tool-surface", surface, "--apps", apps,
      ...(process.env.ARCANE_CACHE_DIR ? ["--catalog-cache-dir", process.env.ARCANE_CACHE_DIR] : []), ...args],
    env: { PATH: process.env.PATH ?? "", ARCANE_MCP_LOG: "error" },
    // The repository's root: the catalog directory (catalog/) is found from it.
    cwd: join(here, "..", ".."),
    stderr: "ignore",
  });
  const capabilities = { elicitation: { form: {} } };
  if (ui) capabilities.extensions = { [EXT]: { mimeTypes: [MIME] } };
  const client = new Client({ name: "arcane-mcp-apps-test", version: "1.0.0" }, { capabilities });
  // The person's answers to the server's confirmation questions, in order; none left: decline.
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(asked === report.elicitations ? String(req.params.message ?? "").split("\n")[0] : String(req.params.message ?? ""));
    return answers.shift() ?? { action: "decline" };
  });
  await client.connect(transport);
  clients.push(client);
  return client;
}
const viewMeta = (t) => t._meta?.ui?.resourceUri === URI && t._meta?.["ui/resourceUri"] === URI;
const anyUiMeta = (t) => t._meta?.ui !== undefined || t._meta?.["ui/resourceUri"] !== undefined;
const strip = (t) => {
  const { _meta, ...rest } = t;
  const meta = { ..._meta };
  delete meta.ui;
  delete meta["ui/resourceUri"];
  return Object.keys(meta).length ? { ...rest, _meta: meta } : rest;
};
async function simRequests() {
  const r = await fetch(`${SIM}/__sim/requests`);
  return r.json();
}

// ---- the protocol side --------------------------------------------------------------------
async function protocol(withUi) {
  const [plain, off, dyn, meta] = await Promise.all([
    connect("individual", { ui: false }),
    connect("individual", { apps: "off" }),
    connect("dynamic"),
    connect("meta"),
  ]);
  check(withUi.getServerCapabilities()?.extensions?.[EXT]?.mimeTypes?.includes(MIME), "the server declares the extension");
  check(!plain.getServerCapabilities()?.extensions?.[EXT], "no extension declared to a client without it");
  check(!off.getServerCapabilities()?.extensions?.[EXT], "--apps off: no extension declared");
  const [t0, t1, t2] = await Promise.all([plain, withUi, off].map(async (c) => (await c.listTools()).tools));
  check(!t0.some(anyUiMeta), "a client without the extension sees no ui _meta");
  check(!t2.some(anyUiMeta), "--apps off: no ui _meta even with the extension");
  report.linked = t1.filter(viewMeta).map((t) => t.name).sort();
  check(t1.filter(anyUiMeta).every(viewMeta), "every ui _meta has both keys");
  check(JSON.stringify(t1.map(strip)) === JSON.stringify(t0), "tool definitions differ in more than the ui _meta");
  const dynTools = (await dyn.listTools()).tools;
  report.linkedDynamic = dynTools.filter(viewMeta).map((t) => t.name);
  const metaTools = (await meta.listTools()).tools;
  report.linkedMeta = metaTools.filter(viewMeta).map((t) => t.name).sort();

  const listAll = async (c) => {
    const out = [];
    let cursor;
    do { const r = await c.listResources(cursor ? { cursor } : {}); out.push(...r.resources); cursor = r.nextCursor; } while (cursor);
    return out;
  };
  const [r0, r1, r2] = await Promise.all([plain, withUi, off].map(listAll));
  check(!r0.some((r) => r.uri.startsWith("ui://")), "no ui:// resource for a client without the extension");
  check(!r2.some((r) => r.uri.startsWith("ui://")), "no ui:// resource with --apps off");
  const listed = r1.find((r) => r.uri === URI);
  check(listed?.mimeType === MIME, `the ui:// resource is listed with ${MIME}: ${JSON.stringify(listed)}`);
  check(r1.length === r0.length + 1, "the view is the one resource more");
  const read = await withUi.readResource({ uri: URI });
  const c = read.contents?.[0] ?? {};
  check(c.uri === URI && c.mimeType === MIME, "read: uri and MIME type");
  check(typeof c.text === "string" && c.text.startsWith("<!DOCTYPE html>"), "read: an HTML document");
  const csp = c._meta?.ui?.csp;
  check(csp && ["connectDomains", "resourceDomains", "frameDomains"].every((k) => Array.isArray(csp[k]) && csp[k].length === 0), `read: a CSP asking for no origin: ${JSON.stringify(c._meta)}`);
  check(c._meta?.ui?.permissions?.clipboardWrite !== undefined, "read: clipboard write asked for");
  let refused = false;
  try { await off.readResource({ uri: URI }); } catch { refused = true; }
  check(refused, "--apps off: the view cannot be read");
  report.bundleBytes = Buffer.byteLength(c.text ?? "");

  // The result is the same with or without the extension.
  const args = { name: "arcane_container_list", arguments: { limit: 5 } };
  const [a, b] = await Promise.all([plain.callTool(args), withUi.callTool(args)]);
  check(JSON.stringify(a.content) === JSON.stringify(b.content), "result text differs with the extension");
  check(JSON.stringify(a.structuredContent) === JSON.stringify(b.structuredContent), "structuredContent differs with the extension");
  return { html: c.text, csp: c._meta.ui.csp, dyn, dynTools };
}

// ---- the test host, on loopback ------------------------------------------------------------
function hostServer(html, csp) {
  // The CSP a host builds from the resource's metadata (SEP-1865, "Host Behavior").
  const header = [
    "default-src 'none'",
    "script-src 'self' 'unsafe-inline'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    `connect-src ${csp.connectDomains.join(" ") || "'none'"}`,
    `frame-src ${csp.frameDomains.join(" ") || "'none'"}`,
    "object-src 'none'",
    "base-uri 'self'",
  ].join("; ");
  const nm = join(here, "node_modules");
  const server = http.createServer((req, res) => {
    const path = new URL(req.url, "http://x").pathname;
    const send = (type, body, extra = {}) => { res.writeHead(200, { "content-type": type, ...extra }); res.end(body); };
    if (path === "/host.html") return send("text/html", readFileSync(join(here, "host.html")));
    if (path === "/host.js") return send("text/javascript", readFileSync(join(here, "host.js")));
    if (path === "/view") return send("text/html", html, { "content-security-policy": header });
    if (path.startsWith("/nm/")) {
      const file = normalize(join(nm, decodeURIComponent(path.slice(4))));
      if (file.startsWith(nm + "/") && file.endsWith(".js")) {
        try { return send("text/javascript", readFileSync(file)); } catch { /* 404 below */ }
      }
    }
    res.writeHead(404);
    res.end();
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

// ---- pages ---------------------------------------------------------------------------------
let browser, origin;
const viewRequests = { count: 0 };
async function newPage(client, width = 900) {
  const page = await browser.newPage();
  await page.setViewport({ width, height: 800 });
  // The flows run side by side and Chromium shows one tab at a time: a tab left behind is
  // "hidden", where a live view rightly pauses, so which views refresh would depend on which
  // page opened last. Every page, its view's frame too, is the one a person looks at; the
  // stats flow hides its own on purpose.
  await page.evaluateOnNewDocument(() => {
    Object.defineProperty(document, "visibilityState", { configurable: true, get: () => "visible" });
    Object.defineProperty(document, "hidden", { configurable: true, get: () => false });
  });
  page.on("request", (req) => {
    const u = req.url();
    const path = u.startsWith(origin) ? u.slice(origin.length) : null;
    if (path === "/view") viewRequests.count++;
    else if (path === null || !(path === "/host.html" || path === "/host.js" || path.startsWith("/nm/"))) {
      problems.push(`a request left for something but the host: ${u.slice(0, 200)}`);
    } else if (req.frame() && req.frame() !== page.mainFrame()) {
      problems.push(`the view requested ${u.slice(0, 200)}`);
    }
  });
  page.on("console", (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) problems.push(`CSP: ${m.text().slice(0, 300)}`);
  });
  page.on("pageerror", (e) => problems.push(`page error: ${String(e.message).slice(0, 300)}`));
  page.on("dialog", async (d) => { problems.push(`a dialog opened: ${d.message().slice(0, 100)}`); await d.dismiss(); });
  await page.exposeFunction("hostCallTool", async (params) => {
    const k = `${params.name} ${params.arguments?.action ?? ""}`.trim();
    report.calls[k] = (report.calls[k] ?? 0) + 1;
    return client.callTool(params);
  });
  await page.goto(`${origin}/host.html`);
  return page;
}
async function open(page, tools, name, args, result, theme = "light") {
  const tool = tools.find((t) => t.name === name);
  await page.evaluate((o) => window.openView(o), { tool, args, result, theme });
  const frame = page.frames().find((f) => f.url().endsWith("/view"));
  return frame;
}
const viewIs = (frame, kind) => frame.waitForFunction((k) => document.getElementById("view").dataset.view === k, { timeout: WAIT }, kind);
const viewChanges = (frame, from) => frame.waitForFunction((k) => document.getElementById("view").dataset.view !== k, { timeout: WAIT }, from);
// Clicks the row's button for `action` (with `click` false, only looks); whether it has one.
async function rowAction(frame, rowText, action, click = true) {
  return frame.evaluate((name, act, click) => {
    for (const tr of document.querySelectorAll("tbody tr")) {
      if (tr.querySelector("td").textContent === name) {
        const b = tr.querySelector(`button[data-action="${act}"]`);
        if (b) { if (click) b.click(); return true; }
      }
    }
    return false;
  }, rowText, action, click);
}
const cname = (c) => c.name ?? c.names?.[0];
const hostCalls = (page, pred) => page.evaluate((src) => window.seen.calls.filter(new Function("c", `return ${src}`)).length, pred);

// The app's rule for invisible characters (docs/apps.md): each shown as ⟨U+XXXX⟩.
function expectShown(s) {
  let out = "";
  for (const ch of s) {
    const c = ch.codePointAt(0);
    const hidden = c <= 0x1f || (c >= 0x7f && c <= 0x9f) || c === 0xad || c === 0x61c || c === 0x180e ||
      (c >= 0x200b && c <= 0x200f) || (c >= 0x2028 && c <= 0x202e) || (c >= 0x2060 && c <= 0x206f) ||
      c === 0xfeff || (c >= 0xfff9 && c <= 0xfffb);
    out += hidden ? `\u27e8U+${c.toString(16).toUpperCase().padStart(4, "0")}\u27e9` : ch;
  }
  return out;
}

// ---- the checks ----------------------------------------------------------------------------
async function lists(client, tools) {
  const page = await newPage(client);
  const cases = [
    ["arcane_container_list", { limit: 100 }],
    ["arcane_project_list", { limit: 100 }],
    ["arcane_image_list", {}],
    ["arcane_volume_list", { limit: 100 }],
    ["arcane_network_list", {}],
    ["arcane_swarm_service_list", {}],
    ["arcane_environment_list", {}],
  ];
  for (const [name, args] of cases) {
    const result = await client.callTool({ name, arguments: args });
    check(!result.isError, `${name}: ${JSON.stringify(result.content).slice(0, 300)}`);
    const frame = await open(page, tools, name, args, result);
    await viewIs(frame, "list");
    const items = result.structuredContent.items;
    const got = await frame.evaluate(() => ({
      rows: document.querySelectorAll("tbody tr").length,
      first: [...document.querySelectorAll("tbody tr td:first-child")].map((td) => td.textContent),
      count: document.querySelector(".count").textContent,
      badges: document.querySelectorAll("tbody .badge").length,
    }));
    check(got.rows === Math.min(items.length, 500), `${name}: ${got.rows} rows for ${items.length} items`);
    check(got.count.startsWith(`${got.rows} of ${items.length}`), `${name}: count says ${got.count}`);
    report.views[name] = got.rows;
    if (name === "arcane_container_list") {
      check(got.badges === items.length, "container list: a state badge per row");
      // Hostile names: each shown exactly as text.
      for (const [i, h] of HOSTILE.entries()) {
        const want = expectShown(`h${i}-${h}`);
        check(got.first.includes(want), `hostile name ${i} not shown as text: ${JSON.stringify(want)}`);
      }
      const dom = await frame.evaluate(() => ({
        pwned: window.__pwned ?? null,
        scripts: document.scripts.length,
        images: document.images.length,
        links: document.querySelectorAll("a, [href], [src]").length,
        handlers: [...document.querySelectorAll("*")].filter((e) => [...e.attributes].some((a) => a.name.startsWith("on"))).length,
      }));
      check(dom.pwned === null && dom.scripts === 1 && dom.images === 0 && dom.links === 0 && dom.handlers === 0, `hostile values made markup: ${JSON.stringify(dom)}`);
      report.hostileChecked = HOSTILE.length;
      // Filter and sort in place.
      await frame.type("input[type=search]", "web");
      const filtered = await frame.evaluate(() => [...document.querySelectorAll("tbody tr")].map((tr) => tr.textContent));
      check(filtered.length > 0 && filtered.length < got.rows && filtered.every((t) => t.toLowerCase().includes("web")), `filter "web": ${filtered.length} rows`);
      await frame.evaluate(() => { const i = document.querySelector("input[type=search]"); i.value = ""; i.dispatchEvent(new Event("input")); });
      await frame.click("th button");
      const names = await frame.evaluate(() => [...document.querySelectorAll("tbody tr td:first-child")].map((td) => td.textContent));
      const sorted = [...names].sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
      check(JSON.stringify(names) === JSON.stringify(sorted), "sorting by name");
      // A paused container is offered Unpause, never Start (Docker refuses to start it).
      const paused = items.find((c) => cname(c) === "cache-1" && c.state === "paused");
      check(paused !== undefined, "the demo's cache-1 is listed, paused");
      report.ids.unpaused = paused?.id;
      check(!(await rowAction(frame, "cache-1", "container.start", false)), "cache-1 (paused) offers no Start");
      check(await rowAction(frame, "cache-1", "container.unpause"), "cache-1 (paused) has an Unpause button");
      await viewChanges(frame, "list");
      check((await hostCalls(page, "c.name === 'arcane_container_unpause'")) === 1, "Unpause went through the host as tools/call");
      await frame.click("#back");
      await viewIs(frame, "list");
      // Per-row actions reach the server as tools/call.
      const web = items.find((c) => cname(c) === "web-1");
      report.ids.restarted = web?.id;
      check(await rowAction(frame, "web-1", "container.restart"), "web-1 has a Restart button");
      await viewChanges(frame, "list");
      check((await hostCalls(page, "c.name === 'arcane_container_restart'")) === 1, "Restart went through the host as tools/call");
      check(!JSON.stringify(await page.evaluate(() => window.seen.calls)).includes("confirm"), "the view never sends confirm");
    }
    if (name === "arcane_project_list") {
      for (const [i, h] of HOSTILE.entries()) check(got.first.includes(expectShown(`h${i}-${h}`)), `hostile project name ${i} not shown as text`);
    }
  }
  const sizes = await page.evaluate(() => window.seen.sizes);
  check(sizes.length > 0 && sizes.every((s) => s.height > 0), "the view reports its size");
  await page.close();
}

async function destructive(tools) {
  // The first question is declined, the second accepted.
  const client = await connect("individual", { answers: [{ action: "decline" }, { action: "accept", content: { confirm: true } }] });
  const page = await newPage(client);
  const args = { limit: 100 };
  const result = await client.callTool({ name: "arcane_container_list", arguments: args });
  const frame = await open(page, tools, "arcane_container_list", args, result);
  await viewIs(frame, "list");
  // Exited ones: Docker refuses to remove a paused one (and the list check unpauses cache-1).
  const stopped = result.structuredContent.items.filter((c) => c.state === "exited" && !cname(c).startsWith("h"));
  check(stopped.length >= 2, "the demo has two stopped containers");
  const [a, b] = stopped;
  report.ids.declined = a.id;
  report.ids.removed = b.id;
  check(await rowAction(frame, expectShown(cname(a)), "container.delete"), "a Remove button");
  await viewIs(frame, "error");
  const refusal = await frame.evaluate(() => document.getElementById("view").textContent);
  check(/declined/.test(refusal), `the refusal is shown: ${refusal.slice(0, 200)}`);
  await frame.click("#back");
  await viewIs(frame, "list");
  check(await rowAction(frame, expectShown(cname(b)), "container.delete"), "a Remove button");
  await viewChanges(frame, "list");
  check(report.elicitations.length === 2 && report.elicitations.every((m) => m.includes("container.delete") || /remove|delete/i.test(m)), `asked twice: ${JSON.stringify(report.elicitations)}`);
  await page.close();
}

// The server's history (docs/undo.md): a server started with --history stops web-1, creates a
// volume and deletes it; the Changes view offers Undo on the stop only (the deletion cannot be undone); the
// Undo goes through the host as history.undo with the row's id, the server asks, the first
// answer declines (web-1 stays stopped), the second accepts (web-1 runs again).
async function history() {
  const dir = mkdtempSync(join(tmpdir(), "arcane-apps-history-"));
  const asked = [];
  const accept = { action: "accept", content: { confirm: true } };
  try {
    const client = await connect("individual", {
      args: ["--history", join(dir, "history.jsonl")], asked,
      answers: [accept, { action: "decline" }, accept],
    });
    const tools = (await client.listTools()).tools;
    // What Arcane (the simulator) holds, not what a call answers.
    const web1 = async () => (await (await fetch(`${SIM}/__sim/state`)).json()).containers.find((c) => c.name === "web-1");
    const state = async () => (await web1())?.state;
    const stop = await client.callTool({ name: "arcane_container_stop", arguments: { containerId: "web-1" } });
    check(!stop.isError && (await state()) !== "running", `history: web-1 stopped: ${JSON.stringify(stop.content).slice(0, 300)}`);
    const made = await client.callTool({ name: "arcane_volume_create", arguments: { name: "scratch" } });
    check(!made.isError, `history: scratch created: ${JSON.stringify(made.content).slice(0, 300)}`);
    const del = await client.callTool({ name: "arcane_volume_delete", arguments: { volumeName: "scratch" } });
    check(!del.isError, `history: scratch deleted: ${JSON.stringify(del.content).slice(0, 300)}`);
    const page = await newPage(client);
    const args = {};
    const result = await client.callTool({ name: "arcane_history_list", arguments: args });
    const items = result.structuredContent?.items ?? [];
    const stopped = items.find((c) => c.action === "container.stop");
    const deleted = items.find((c) => c.action === "volume.delete");
    check(stopped?.undoable === true && deleted?.undoable === false, `history.list: ${JSON.stringify(items).slice(0, 500)}`);
    const frame = await open(page, tools, "arcane_history_list", args, result);
    await viewIs(frame, "list");
    const got = await frame.evaluate(() => ({
      title: document.getElementById("title").textContent,
      heads: [...document.querySelectorAll("thead th")].map((th) => th.textContent),
      rows: document.querySelectorAll("tbody tr").length,
    }));
    check(got.title === "Changes" && JSON.stringify(got.heads) === JSON.stringify(["ID", "When", "By", "Action", "Undo", ""]) && got.rows === items.length, `the Changes view: ${JSON.stringify(got)}`);
    check(!(await rowAction(frame, deleted?.id, "history.undo", false)), "the volume's deletion offers no Undo");
    const danger = await frame.evaluate((id) => [...document.querySelectorAll("tbody tr")].find((tr) => tr.querySelector("td").textContent === id)?.querySelector("button[data-action='history.undo']")?.className, stopped?.id);
    check(danger === "danger", `Undo is marked destructive: ${danger}`);
    const undos = `c.name === 'arcane_history_undo' && c.arguments?.id === ${JSON.stringify(stopped?.id)} && Object.keys(c.arguments).length === 1`;
    // Declined: the refusal is shown, nothing changes.
    check(await rowAction(frame, stopped?.id, "history.undo"), "the stop has an Undo button");
    await viewIs(frame, "error");
    const refusal = await frame.evaluate(() => document.getElementById("view").textContent);
    check(/declined/.test(refusal), `history: the refusal is shown: ${refusal.slice(0, 200)}`);
    check((await state()) !== "running", "history: a declined undo leaves web-1 stopped");
    await frame.click("#back");
    await viewIs(frame, "list");
    // Accepted: web-1 runs again.
    check(await rowAction(frame, stopped?.id, "history.undo"), "the stop has an Undo button");
    await viewChanges(frame, "list");
    check((await hostCalls(page, undos)) === 2, `Undo went through the host as history.undo with the row's id: ${JSON.stringify(await page.evaluate(() => window.seen.calls))}`);
    check((await state()) === "running", "history: the accepted undo started web-1");
    check(asked.length === 3 && asked.slice(1).every((m) => m.includes(stopped?.id) && m.includes("container.start")), `history: each undo asked, naming the change: ${JSON.stringify(asked)}`);
    // The undo repeats the stop's own parameter: Arcane sees a start of "web-1".
    report.ids.undone = "web-1";
    await page.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function stats(client, tools) {
  const page = await newPage(client);
  const args = { containerId: "web-1" };
  const result = await client.callTool({ name: "arcane_container_stats", arguments: args });
  const frame = await open(page, tools, "arcane_container_stats", args, result);
  await viewIs(frame, "stats");
  await frame.waitForFunction(() => Number(document.getElementById("view").dataset.refreshes) >= 2, { timeout: WAIT });
  const calls = await hostCalls(page, "c.name === 'arcane_container_stats'");
  check(calls >= 2, `stats refreshed through the host: ${calls} calls`);
  const points = await frame.evaluate(() => document.querySelector(".chart polyline").getAttribute("points").split(" ").length);
  check(points >= 3, `the CPU chart has the samples: ${points}`);
  // Hidden: the refresh stops.
  await frame.evaluate(() => {
    Object.defineProperty(document, "visibilityState", { configurable: true, get: () => "hidden" });
    document.dispatchEvent(new Event("visibilitychange"));
  });
  await frame.waitForFunction(() => document.getElementById("view").dataset.live === "off", { timeout: WAIT });
  const before = await hostCalls(page, "c.name === 'arcane_container_stats'");
  // A call in flight when it was hidden may still land; none starts after it.
  await new Promise((r) => setTimeout(r, 4000));
  const after = await hostCalls(page, "c.name === 'arcane_container_stats'");
  check(after === before, `stats went on while hidden: ${before} → ${after}`);
  report.views.statsRefreshes = before;
  await page.close();
}

async function logs(client, tools) {
  const page = await newPage(client);
  const args = { containerId: "web-1", tail: 200 };
  const result = await client.callTool({ name: "arcane_container_logs", arguments: args });
  const frame = await open(page, tools, "arcane_container_logs", args, result);
  await viewIs(frame, "logs");
  const lines = result.structuredContent.lines;
  const got = await frame.evaluate(() => ({ lines: document.querySelectorAll(".ln").length, stderr: document.querySelectorAll(".ln.stderr").length }));
  check(got.lines === lines.length && lines.length > 0, `logs: ${got.lines} of ${lines.length} lines`);
  check(got.stderr === lines.filter((l) => l.startsWith("[STDERR] ")).length && got.stderr > 0, `stderr marked: ${got.stderr}`);
  await frame.type("input[type=search]", "warning");
  const hits = await frame.evaluate(() => document.querySelectorAll(".ln.hit").length);
  check(hits === lines.filter((l) => l.toLowerCase().includes("warning")).length && hits > 0, `search: ${hits} hits`);
  await frame.click("label:nth-of-type(2) input");
  check(await frame.evaluate(() => document.querySelector(".log").classList.contains("wrap")), "wrap");
  await frame.evaluate(() => document.querySelector("button[data-role=live]").click());
  await page.waitForFunction(() => window.seen.calls.filter((c) => c.name === "arcane_container_logs").length >= 1, { timeout: WAIT });
  await frame.evaluate(() => document.querySelector("button[data-role=live]").click());
  check((await frame.evaluate(() => document.querySelector("button[data-role=live]").textContent)) === "Follow", "following stops");
  report.views.logs = got.lines;
  await page.close();
}

async function objects(client, tools) {
  const page = await newPage(client);
  for (const [name, args] of [["arcane_container_get", { containerId: "web-1" }], ["arcane_project_get", { projectId: "webshop" }], ["arcane_image_get", { imageId: "nginx:1.27-alpine" }]]) {
    const result = await client.callTool({ name, arguments: args });
    const frame = await open(page, tools, name, args, result);
    await viewIs(frame, "object");
    const seen = await frame.evaluate(() => ({
      keys: [...document.querySelectorAll("#view > div > dl > dt, #view > div > section > h2")].map((e) => e.textContent),
      left: document.querySelector(".note")?.textContent ?? "",
    }));
    const sc = result.structuredContent;
    const empty = (v) => v === null || v === "" || (Array.isArray(v) && !v.length) || (typeof v === "object" && v && !Object.keys(v).length);
    for (const [k, v] of Object.entries(sc)) {
      if (empty(v)) continue;
      const named = seen.keys.some((t) => t === k || t.startsWith(`${k} (`)) || seen.left.includes(k);
      check(named, `${name}: ${k} neither shown nor named as not shown`);
    }
    report.views[name] = seen.keys.length;
  }
  await page.close();
}

async function dashboard(client, tools) {
  const page = await newPage(client);
  const args = {};
  const result = await client.callTool({ name: "arcane_environment_dashboard", arguments: args });
  check(!result.isError, `dashboard: ${JSON.stringify(result.content).slice(0, 300)}`);
  const frame = await open(page, tools, "arcane_environment_dashboard", args, result);
  await viewIs(frame, "dashboard");
  await frame.waitForFunction(() => [...document.querySelectorAll("h2")].some((h) => h.textContent === "Projects not fully running"), { timeout: WAIT });
  const got = await frame.evaluate(() => ({ cards: document.querySelectorAll(".card").length, text: document.getElementById("view").textContent }));
  const cards = got.cards;
  check(cards >= 4, `dashboard cards: ${cards}`);
  check(got.text.includes("Containers by state") && got.text.includes("webshop"), "dashboard: containers by state, the partly running project");
  check((await hostCalls(page, "c.name === 'arcane_project_list'")) === 1, "dashboard: projects read through the host");
  report.views.dashboard = cards;
  await page.close();
}

async function dynamicSurface(client, tools) {
  const page = await newPage(client, 380);
  const args = { action: "container.list", params: { limit: 100 } };
  const result = await client.callTool({ name: "arcane_execute_action", arguments: args });
  const frame = await open(page, tools, "arcane_execute_action", args, result, "dark");
  await viewIs(frame, "list");
  const look = await frame.evaluate(() => ({ theme: document.documentElement.dataset.theme, thead: getComputedStyle(document.querySelector("thead")).display }));
  check(look.theme === "dark", "the host's theme");
  check(look.thead === "none", "narrow: rows as cards");
  await page.evaluate(() => window.bridge.setHostContext({ theme: "light" }));
  await frame.waitForFunction(() => document.documentElement.dataset.theme === "light", { timeout: WAIT });
  check(await rowAction(frame, "web-1", "container.logs"), "Logs on the dynamic surface");
  await viewIs(frame, "logs");
  const via = await page.evaluate(() => window.seen.calls.map((c) => [c.name, c.arguments?.action]));
  check(JSON.stringify(via) === JSON.stringify([["arcane_execute_action", "container.logs"]]), `called through the execute tool: ${JSON.stringify(via)}`);
  await page.close();
}

// ---- screenshots ---------------------------------------------------------------------------
async function screenshots(client, tools) {
  mkdirSync(outDir, { recursive: true });
  const views = [
    ["containers", "arcane_container_list", { limit: 100 }, "list"],
    ["dashboard", "arcane_environment_dashboard", {}, "dashboard"],
    ["stats", "arcane_container_stats", { containerId: "web-1" }, "stats"],
    ["logs", "arcane_container_logs", { containerId: "web-1", tail: 200 }, "logs"],
    ["container", "arcane_container_get", { containerId: "web-1" }, "object"],
  ];
  for (const [file, name, args, kind] of views) {
    const result = await client.callTool({ name, arguments: args });
    for (const theme of ["light", "dark"]) {
      for (const [width, label] of [[900, "wide"], [380, "narrow"]]) {
        const page = await newPage(client, width);
        const frame = await open(page, tools, name, args, result, theme);
        await viewIs(frame, kind);
        if (kind === "stats") await frame.waitForFunction(() => Number(document.getElementById("view").dataset.refreshes) >= 2, { timeout: WAIT });
        if (kind === "dashboard") await frame.waitForFunction(() => [...document.querySelectorAll("h2")].some((h) => h.textContent === "Projects not fully running"), { timeout: WAIT });
        await new Promise((r) => setTimeout(r, 200));
        const el = await page.$("#view");
        await el.screenshot({ path: join(outDir, `${file}-${theme}-${label}.png`), clip: undefined });
        await page.close();
      }
    }
  }
}

// ---- run -----------------------------------------------------------------------------------
let server;
try {
  const withUi = await connect("individual");
  const tools = (await withUi.listTools()).tools;
  const { html, csp, dyn, dynTools } = await protocol(withUi);
  server = await hostServer(html, csp);
  origin = `http://127.0.0.1:${server.address().port}`;
  browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--font-render-hinting=none"],
  });
  if (mode === "screenshots") {
    await screenshots(withUi, tools);
  } else {
    await Promise.all([
      lists(withUi, tools),
      stats(withUi, tools),
      logs(withUi, tools),
      objects(withUi, tools),
      dashboard(withUi, tools),
      dynamicSurface(dyn, dynTools),
      destructive(tools),
    ]);
    // After the others: it stops web-1, which they read, restart and keep running.
    await history();
    check(viewRequests.count > 0, "the view was loaded");
    report.viewLoads = viewRequests.count;
    report.simRequests = (await simRequests()).map((r) => `${r.method} ${r.path}`);
  }
} catch (e) {
  problems.push(`failed: ${e?.stack ?? e}`.slice(0, 2000));
} finally {
  await browser?.close();
  server?.close();
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
}
report.seconds = (Date.now() - started) / 1000;
console.log(JSON.stringify(report));
process.exit(problems.length ? 1 : 0);
