// Writes the npm package `arcane-mcp-server-PLATFORM` (the binary for one platform) into OUTDIR:
//   node scripts/npm-platform.mjs PLATFORM VERSION BINARY OUTDIR
// PLATFORM is Node's `${process.platform}-${process.arch}` (linux-x64, darwin-arm64, ...);
// npm installs the package only where its os/cpu fields match, which is how the launcher
// package `arcane-mcp-server` (packaging/npm/arcane-mcp-server) gets exactly one binary.
import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const [platform, version, binary, outdir] = process.argv.slice(2);
if (!outdir) {
  console.error("usage: node scripts/npm-platform.mjs PLATFORM VERSION BINARY OUTDIR");
  process.exit(2);
}
const launcher = JSON.parse(
  readFileSync(join(dirname(fileURLToPath(import.meta.url)), "..", "packaging/npm/arcane-mcp-server/package.json"), "utf8"),
);
const name = `arcane-mcp-server-${platform}`;
if (!(name in launcher.optionalDependencies)) {
  console.error(`${name} is not among the optionalDependencies of packaging/npm/arcane-mcp-server/package.json`);
  process.exit(2);
}
const [os, cpu] = platform.split("-");
const exe = os === "win32" ? "arcane-mcp.exe" : "arcane-mcp";
if (basename(binary) !== exe) {
  console.error(`the binary for ${platform} must be named ${exe}, not ${basename(binary)}`);
  process.exit(2);
}
mkdirSync(join(outdir, "bin"), { recursive: true });
copyFileSync(binary, join(outdir, "bin", exe));
chmodSync(join(outdir, "bin", exe), 0o755);
const pkg = {
  name,
  version,
  description: `The arcane-mcp binary for ${platform} (installed by the arcane-mcp-server package)`,
  license: launcher.license,
  homepage: launcher.homepage,
  repository: launcher.repository,
  os: [os],
  cpu: [cpu],
  files: [`bin/${exe}`, "LICENSE"],
  // Yarn PnP would otherwise keep the binary inside a zip archive, where it cannot be run.
  preferUnplugged: true,
};
writeFileSync(join(outdir, "package.json"), JSON.stringify(pkg, null, 2) + "\n");
writeFileSync(
  join(outdir, "README.md"),
  `# ${name}\n\nThe \`arcane-mcp\` binary for ${platform}. Install [arcane-mcp-server](https://www.npmjs.com/package/arcane-mcp-server) instead: it picks this package on ${platform}.\n`,
);
