// Builds the one-file MCP Apps view, apps/dist/arcane-app.html, from apps/src/ (index.html,
// app.css, app.js): the CSS and JavaScript inline, and a Content-Security-Policy that allows
// exactly those two by their SHA-256 and nothing else (no network, no frames, no other script).
// No dependencies but Node's own; the output depends on the sources only.
//
//   node apps/build.mjs          writes the bundle
//   node apps/build.mjs --check  exits 1 when the committed bundle is not what the sources make
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const read = (f) => readFileSync(join(here, "src", f), "utf8");
const sha = (s) => "'sha256-" + createHash("sha256").update(s, "utf8").digest("base64") + "'";

const css = read("app.css");
const js = read("app.js");
for (const [name, text] of [["app.css", css], ["app.js", js]]) {
  if (text.includes("</")) throw new Error(`${name} must not contain "</" (it is inlined)`);
}
const csp = [
  "default-src 'none'",
  `script-src ${sha(js)}`,
  `style-src ${sha(css)}`,
  "img-src data:",
  "connect-src 'none'",
  "font-src 'none'",
  "frame-src 'none'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ");
const html = read("index.html")
  .replace("{{CSP}}", () => csp)
  .replace("{{CSS}}", () => css)
  .replace("{{JS}}", () => js);

const out = join(here, "dist", "arcane-app.html");
if (process.argv.includes("--check")) {
  let committed = "";
  try { committed = readFileSync(out, "utf8"); } catch { /* missing: differs */ }
  if (committed !== html) {
    console.error("apps/dist/arcane-app.html is not what apps/src/ builds: run `node apps/build.mjs`");
    process.exit(1);
  }
  console.log(`apps/dist/arcane-app.html matches apps/src/ (${Buffer.byteLength(html)} bytes)`);
} else {
  writeFileSync(out, html);
  console.log(`wrote apps/dist/arcane-app.html (${Buffer.byteLength(html)} bytes)`);
}
