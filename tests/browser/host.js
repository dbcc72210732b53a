// The test host: renders the view the way an MCP Apps client does, with the ext-apps SDK's
// AppBridge over postMessage to a sandboxed iframe (scripts only, an opaque origin). Tool calls
// from the view go to the real server through run.mjs (`window.hostCallTool`, exposed by
// puppeteer); everything the bridge saw is kept in `window.seen` for the checks.
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

window.seen = { calls: [], sizes: [], initialized: 0 };

window.openView = async ({ tool, args, result, theme }) => {
  const iframe = document.getElementById("view");
  const bridge = new AppBridge(
    null,
    { name: "arcane-mcp test host", version: "1.0.0" },
    { serverTools: {}, logging: {} },
    { hostContext: { theme, toolInfo: { tool }, displayMode: "inline", platform: "web" } },
  );
  bridge.oncalltool = async (params) => {
    window.seen.calls.push(params);
    return window.hostCallTool(params);
  };
  bridge.onsizechange = ({ width, height }) => {
    window.seen.sizes.push({ width, height });
    if (height) iframe.style.height = `${height}px`;
  };
  const initialized = new Promise((resolve) => {
    bridge.oninitialized = () => {
      window.seen.initialized += 1;
      resolve();
    };
  });
  // Listening before the view loads: its first message is ui/initialize.
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  iframe.src = "/view";
  await initialized;
  await bridge.sendToolInput({ arguments: args });
  await bridge.sendToolResult(result);
  window.bridge = bridge;
};
