// Validates ServiceMonitor manifests (JSON, one per argument file or a JSON array on stdin)
// against prometheus-operator's monitoring.coreos.com/v1 API types, the ones its CRD is
// generated from, as compiled by @kubernetes-models/prometheus-operator (pinned in
// scripts/dist-tools-npm/package-lock.json): types, required fields, enums and patterns
// (durations, label names...). Unknown fields are not reported by that package; scripts/chart.py
// checks the fields the chart writes.
//   node scripts/validate-servicemonitor.mjs NODE_TOOLS_DIR < manifests.json
// Exit code 1, with each problem on stderr, when one is invalid.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [tools] = process.argv.slice(2);
if (!tools) {
  console.error("usage: node scripts/validate-servicemonitor.mjs NODE_TOOLS_DIR < manifests.json");
  process.exit(2);
}
const module = join(tools, "node_modules/@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor.js");
const { ServiceMonitor } = await import(pathToFileURL(module).href);
const docs = JSON.parse(readFileSync(0, "utf8"));
let bad = 0;
for (const doc of docs) {
  try {
    if (!ServiceMonitor.is(doc)) throw new Error(`not a monitoring.coreos.com/v1 ServiceMonitor: ${doc.apiVersion} ${doc.kind}`);
    new ServiceMonitor(doc).validate();
    console.log(`valid ServiceMonitor ${doc.metadata?.name}`);
  } catch (e) {
    bad++;
    console.error(`invalid ServiceMonitor ${doc.metadata?.name}: ${e.message}`);
  }
}
if (docs.length === 0) {
  console.error("no ServiceMonitor given");
  process.exit(1);
}
process.exit(bad ? 1 : 0);
