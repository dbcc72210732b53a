// arcane-mcp's MCP Apps view (docs/apps.md). Plain JavaScript, no dependencies, no build step
// beyond apps/build.mjs inlining it. Every value from Arcane is untrusted: it reaches the page
// only through textContent (never parsed as markup), URLs are never made links, nothing is loaded
// or fetched: the only channel is JSON-RPC with the host over postMessage.
"use strict";
(() => {
  const PROTOCOL = "2026-01-26";
  const APP = { name: "arcane-mcp views", version: "1" };
  // Live refresh (stats, followed logs): one call at a time, this long after the last answer,
  // at most this many times before it pauses itself.
  const REFRESH_MS = 3000;
  const MAX_REFRESHES = 100;
  const MAX_ROWS = 500;
  const MAX_CHART_POINTS = 60;

  // ---- values as text ------------------------------------------------------------------
  // Controls, bidi overrides and invisible characters are shown as ⟨U+XXXX⟩, so a name reads
  // as it is and cannot reorder or hide what stands around it.
  const HIDDEN = /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]/g;
  const HIDDEN_IN_LOG = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]/g;
  const mark = (c) => "\u27e8U+" + c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0") + "\u27e9";
  const shown = (v) => String(v).replace(HIDDEN, mark);
  const shownLog = (v) => String(v).replace(HIDDEN_IN_LOG, mark);

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }
  function val(v) {
    const s = el("span", "v");
    s.textContent = shown(v);
    return s;
  }
  function button(label, onClick, cls) {
    const b = el("button", cls, label);
    b.type = "button";
    b.addEventListener("click", onClick);
    return b;
  }
  const isObj = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
  const scalar = (v) => v === null || ["string", "number", "boolean"].includes(typeof v);

  function bytes(n) {
    if (typeof n !== "number" || !isFinite(n)) return "";
    const u = ["B", "KB", "MB", "GB", "TB"];
    let i = 0;
    while (Math.abs(n) >= 1000 && i < u.length - 1) { n /= 1000; i++; }
    return (i ? n.toFixed(1) : String(n)) + " " + u[i];
  }
  function when(v) {
    if (typeof v === "number" && v > 1e9 && v < 1e11) v = v * 1000;
    const d = new Date(v);
    return isNaN(d.getTime()) ? String(v) : d.toISOString().replace("T", " ").slice(0, 16) + " UTC";
  }
  function cell(v) {
    if (v === undefined || v === null || v === "") return "";
    if (Array.isArray(v)) return v.map((x) => (scalar(x) ? String(x) : JSON.stringify(x))).join(", ");
    if (isObj(v)) return JSON.stringify(v);
    return String(v);
  }
  function pick(item, paths) {
    for (const p of paths) {
      let v = item;
      for (const k of p.split(".")) v = isObj(v) ? v[k] : undefined;
      if (v !== undefined && v !== null && v !== "") return v;
    }
    return undefined;
  }

  // State words to badge colours: a fixed table, the word itself always shown as text.
  function tone(state) {
    const s = String(state || "").toLowerCase();
    if (/unhealthy|dead|error|fail|exited|down|critical|removing|offline/.test(s)) return "bad";
    if (/partial|restarting|paused|created|starting|pending|degraded|warn|update/.test(s)) return "warn";
    if (/running|healthy|up|online|active|ok|ready|complete|in use/.test(s)) return "ok";
    return "";
  }
  function badge(state) {
    const b = el("span", "badge " + tone(state));
    b.textContent = shown(state);
    return b;
  }

  // ---- the bridge ------------------------------------------------------------------------
  let nextId = 1;
  const pending = new Map();
  function post(msg) { window.parent.postMessage(msg, "*"); }
  function request(method, params) {
    const id = nextId++;
    post({ jsonrpc: "2.0", id, method, params });
    return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
  }
  function notify(method, params) { post({ jsonrpc: "2.0", method, params }); }

  const host = { context: {}, toolName: "", args: {}, result: null, ready: false };

  window.addEventListener("message", (ev) => {
    if (ev.source !== window.parent) return;
    const m = ev.data;
    if (!isObj(m) || m.jsonrpc !== "2.0") return;
    if (m.id !== undefined && !m.method) {
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      if (m.error) p.reject(new Error(String(m.error.message || "the host refused")));
      else p.resolve(m.result);
      return;
    }
    const params = isObj(m.params) ? m.params : {};
    switch (m.method) {
      case "ui/notifications/tool-input":
        host.args = isObj(params.arguments) ? params.arguments : {};
        break;
      case "ui/notifications/tool-input-partial":
        break;
      case "ui/notifications/tool-result":
        host.result = params;
        start(params);
        break;
      case "ui/notifications/tool-cancelled":
        status("The call was cancelled.", true);
        break;
      case "ui/notifications/host-context-changed":
        applyContext(params);
        break;
      case "ui/resource-teardown":
        stopLive();
        post({ jsonrpc: "2.0", id: m.id, result: {} });
        break;
      case "ping":
        post({ jsonrpc: "2.0", id: m.id, result: {} });
        break;
      default:
        if (m.id !== undefined) post({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "Method not found" } });
    }
  });

  function applyContext(ctx) {
    Object.assign(host.context, ctx);
    if (ctx.theme === "dark" || ctx.theme === "light") document.documentElement.dataset.theme = ctx.theme;
    const vars = ctx.styles && isObj(ctx.styles.variables) ? ctx.styles.variables : null;
    if (vars) {
      for (const [k, v] of Object.entries(vars)) {
        // Only the spec's custom properties, set through the CSSOM; fonts are not loaded.
        if (/^--[a-z0-9-]+$/.test(k) && typeof v === "string" && v.length < 200) {
          document.documentElement.style.setProperty(k, v);
        }
      }
    }
    if (ctx.toolInfo && isObj(ctx.toolInfo.tool) && typeof ctx.toolInfo.tool.name === "string") {
      host.toolName = ctx.toolInfo.tool.name;
    }
  }

  let lastSize = "";
  // The body's own height (the document's is at least the frame's): the host fits the frame.
  function reportSize() {
    const r = document.body.getBoundingClientRect();
    const width = Math.ceil(r.width), height = Math.ceil(r.height);
    const size = width + "x" + height;
    if (size === lastSize) return;
    lastSize = size;
    notify("ui/notifications/size-changed", { width, height });
  }

  async function init() {
    try {
      const r = await request("ui/initialize", {
        protocolVersion: PROTOCOL,
        appInfo: APP,
        appCapabilities: { availableDisplayModes: ["inline"] },
      });
      if (isObj(r) && isObj(r.hostContext)) applyContext(r.hostContext);
      host.ready = true;
      notify("ui/notifications/initialized", {});
    } catch (e) {
      status("The host did not start the view: " + e.message, true);
    }
    new ResizeObserver(reportSize).observe(document.body);
    reportSize();
  }

  // ---- calling tools through the host -----------------------------------------------------
  // Which surface opened the view decides how an action is called back: the execute tool
  // (dynamic), a domain tool (meta) or the action's own tool (individual).
  function actionOf(toolName, args) {
    if (typeof args.action === "string" && toolName === "arcane_execute_action") return args.action;
    const m = /^arcane_(.+)$/.exec(toolName || "");
    if (!m) return typeof args.action === "string" ? args.action : "";
    if (typeof args.action === "string") return m[1] + "." + args.action;
    for (const d of DOMAINS) {
      if (m[1].startsWith(d + "_")) return d + "." + m[1].slice(d.length + 1);
    }
    const i = m[1].lastIndexOf("_");
    return i > 0 ? m[1].slice(0, i) + "." + m[1].slice(i + 1) : m[1];
  }
  const DOMAINS = ["swarm_service", "container", "project", "image", "volume", "network", "environment", "system"];
  function surface() {
    if (host.toolName === "arcane_execute_action") return "dynamic";
    if (typeof host.args.action === "string") return "meta";
    return "individual";
  }
  function callFor(action, params) {
    const dot = action.indexOf(".");
    const domain = action.slice(0, dot), name = action.slice(dot + 1);
    switch (surface()) {
      case "dynamic": return { name: "arcane_execute_action", arguments: { action, params } };
      case "meta": return { name: "arcane_" + domain, arguments: { action: name, params } };
      default: return { name: "arcane_" + domain + "_" + name, arguments: params };
    }
  }
  function paramsOf(args) {
    if (surface() === "individual") return args;
    const p = args.params;
    if (typeof p === "string") { try { return JSON.parse(p); } catch (_) { return {}; } }
    return isObj(p) ? p : {};
  }
  // Never with "confirm": an action that needs the person's yes is asked by the server,
  // through the host; the view has no way around it.
  async function call(action, params) {
    const r = await request("tools/call", callFor(action, params));
    return isObj(r) ? r : {};
  }

  // ---- navigation -------------------------------------------------------------------------
  const stack = [];
  let live = null;
  function stopLive() {
    if (live) { clearTimeout(live.timer); live.stopped = true; live = null; }
  }
  function status(text, error) {
    const s = document.getElementById("status");
    s.textContent = text || "";
    s.className = error ? "error" : "";
  }
  function show(view) {
    stopLive();
    document.getElementById("back").hidden = stack.length < 2;
    document.getElementById("title").textContent = view.title;
    const main = document.getElementById("view");
    main.replaceChildren();
    main.dataset.view = view.kind;
    view.render(main);
  }
  function push(view) { stack.push(view); show(view); }
  document.getElementById("back").addEventListener("click", () => {
    if (stack.length > 1) { stack.pop(); show(stack[stack.length - 1]); }
  });
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "hidden" && live) {
      const l = live;
      clearTimeout(l.timer);
      l.hiddenStop = true;
      l.onPause();
    }
  });

  function textOf(result) {
    const c = Array.isArray(result.content) ? result.content : [];
    return c.filter((b) => isObj(b) && b.type === "text").map((b) => String(b.text)).join("\n\n");
  }

  // Runs an action for a row: the result opens its own view (Back returns).
  async function runAction(action, params, label) {
    status(label + "\u2026");
    try {
      const r = await call(action, params);
      status("");
      open(action, params, r);
    } catch (e) {
      status(label + " failed: " + e.message, true);
    }
  }

  // ---- choosing a view -------------------------------------------------------------------
  function start(result) {
    const action = actionOf(host.toolName, host.args);
    stack.length = 0;
    open(action, paramsOf(host.args), result);
  }
  function open(action, params, result) {
    const sc = isObj(result.structuredContent) ? result.structuredContent : null;
    const title = TITLES[action] || action || "Result";
    let view;
    if (result.isError || !sc) view = textView(title, result);
    else if (/\.(logs)$/.test(action) && Array.isArray(sc.lines)) view = logsView(title, action, params, sc);
    else if (/\.stats$/.test(action) && Array.isArray(sc.samples)) view = statsView(title, action, params, sc);
    else if (action === "environment.dashboard") view = dashboardView(title, params, sc);
    else if (Array.isArray(sc.items)) view = listView(title, action, params, sc);
    else view = objectView(title, action, sc, textOf(result));
    push(view);
  }
  const TITLES = {
    "container.list": "Containers", "project.list": "Projects", "image.list": "Images",
    "volume.list": "Volumes", "network.list": "Networks", "swarm_service.list": "Swarm services",
    "environment.list": "Environments", "history.list": "Changes", "environment.dashboard": "Dashboard",
    "container.stats": "Container stats", "system.stats": "Host stats",
    "container.logs": "Container logs", "project.logs": "Project logs", "swarm_service.logs": "Service logs",
    "container.get": "Container", "project.get": "Project", "image.get": "Image", "volume.get": "Volume",
    "network.get": "Network", "swarm_service.get": "Swarm service", "environment.get": "Environment",
  };

  function textView(title, result) {
    return {
      kind: result.isError ? "error" : "text", title,
      render(main) {
        const box = el(result.isError ? "div" : "pre", result.isError ? "error-box" : "text");
        box.textContent = shownLog(textOf(result) || "(no text)");
        main.append(box);
      },
    };
  }

  // ---- lists -------------------------------------------------------------------------------
  // Columns per list: label, the fields to read (first set wins), how to show it.
  const COLUMNS = {
    "container.list": [["Name", ["name", "names"]], ["State", ["state"], "badge"], ["Status", ["status"]], ["Image", ["image"]], ["Ports", ["ports"], "ports"]],
    "project.list": [["Name", ["name"]], ["Status", ["status"], "badge"], ["Services", ["serviceCount", "runningCount"]], ["Path", ["path"]]],
    "image.list": [["Repository", ["repoTags", "repo", "id"]], ["Size", ["size"], "bytes"], ["In use", ["inUse", "usedBy"]], ["Update", ["updateInfo.hasUpdate"], "update"], ["Created", ["created"], "when"]],
    "volume.list": [["Name", ["name"]], ["Driver", ["driver"]], ["Size", ["size", "usageData.size"], "bytes"], ["In use", ["inUse"]], ["Created", ["createdAt"], "when"]],
    "network.list": [["Name", ["name"]], ["Driver", ["driver"]], ["Scope", ["scope"]], ["ID", ["id"], "short"]],
    "swarm_service.list": [["Name", ["name"]], ["Image", ["image"]], ["Replicas", ["runningReplicas"], "replicas"], ["Stack", ["stackName"]]],
    "environment.list": [["Name", ["name"]], ["Status", ["status"], "badge"], ["ID", ["id"]], ["Enabled", ["enabled"]]],
    "history.list": [["ID", ["id"]], ["When", ["time"], "when"], ["By", ["by"]], ["Action", ["action"]], ["Undo", ["undo"]]],
  };
  // Per-row actions: label, action, its parameters from the row, destructive (asked by the server).
  const ROW_ACTIONS = {
    "container.list": [
      ["Details", "container.get", (r) => ({ containerId: r.id })],
      ["Logs", "container.logs", (r) => ({ containerId: r.id, tail: 200 })],
      ["Stats", "container.stats", (r) => ({ containerId: r.id })],
      // Docker refuses to start a paused container: it is unpaused instead.
      ["Start", "container.start", (r) => ({ containerId: r.id }), false, (r) => !/running|paused/i.test(String(r.state))],
      ["Unpause", "container.unpause", (r) => ({ containerId: r.id }), false, (r) => /paused/i.test(String(r.state))],
      ["Stop", "container.stop", (r) => ({ containerId: r.id }), false, (r) => /running/i.test(String(r.state))],
      ["Restart", "container.restart", (r) => ({ containerId: r.id })],
      ["Remove", "container.delete", (r) => ({ containerId: r.id }), true],
    ],
    "project.list": [
      ["Details", "project.get", (r) => ({ projectId: r.id })],
      ["Logs", "project.logs", (r) => ({ projectId: r.id, tail: 200 })],
      ["Restart", "project.restart", (r) => ({ projectId: r.id })],
    ],
    "image.list": [
      ["Details", "image.get", (r) => ({ imageId: r.id })],
      ["Remove", "image.delete", (r) => ({ imageId: r.id }), true],
    ],
    "volume.list": [["Details", "volume.get", (r) => ({ volumeName: r.name })]],
    "network.list": [["Details", "network.get", (r) => ({ networkId: r.id })]],
    "swarm_service.list": [
      ["Details", "swarm_service.get", (r) => ({ serviceId: r.id })],
      ["Logs", "swarm_service.logs", (r) => ({ serviceId: r.id, tail: 200 })],
    ],
    "environment.list": [
      ["Details", "environment.get", (r) => ({ environmentId: r.id })],
      ["Dashboard", "environment.dashboard", (r) => ({ environmentId: r.id })],
    ],
    // Only where the history recorded a call that takes the change back (its `undoable`); the
    // server always asks the person before it runs.
    "history.list": [["Undo", "history.undo", (r) => ({ id: r.id }), true, (r) => r.undoable === true]],
  };

  function generic(items) {
    const keys = [];
    for (const it of items.slice(0, 20)) {
      if (!isObj(it)) continue;
      for (const [k, v] of Object.entries(it)) if (scalar(v) && !keys.includes(k)) keys.push(k);
    }
    return keys.slice(0, 6).map((k) => [shown(k), [k], /state|status/i.test(k) ? "badge" : ""]);
  }
  function format(kind, v) {
    switch (kind) {
      case "bytes": return typeof v === "number" ? bytes(v) : cell(v);
      case "when": return v === undefined ? "" : when(v);
      case "short": return String(v || "").slice(0, 12);
      case "update": return v === true ? "available" : v === false ? "" : cell(v);
      case "ports": return Array.isArray(v) ? v.map((p) => isObj(p) ? (p.publicPort ? (p.publicPort + "\u2192") : "") + (p.privatePort || "") + "/" + (p.type || "") : String(p)).join(", ") : cell(v);
      case "replicas": return cell(v);
      default: return cell(v);
    }
  }

  function listView(title, action, params, sc) {
    const items = sc.items.filter(isObj);
    const cols = COLUMNS[action] || generic(items);
    const rowActions = ROW_ACTIONS[action] || [];
    const state = { filter: "", sortCol: -1, dir: 1, stateFilter: "" };
    const stateCol = cols.findIndex((c) => c[2] === "badge");
    const rows = items.map((it) => ({ it, values: cols.map((c) => pick(it, c[1])) }));
    if (action === "swarm_service.list") {
      for (const r of rows) r.values[2] = (r.it.runningReplicas ?? "?") + " / " + (r.it.replicas ?? "?");
    }
    return {
      kind: "list", title,
      render(main) {
        const total = isObj(sc.pagination) ? sc.pagination.totalItems : undefined;
        const count = el("p", "muted count");
        const counts = el("div", "counts");
        if (stateCol >= 0) {
          const by = new Map();
          for (const r of rows) { const s = cell(r.values[stateCol]) || "unknown"; by.set(s, (by.get(s) || 0) + 1); }
          for (const [s, n] of [...by.entries()].sort((a, b) => b[1] - a[1])) {
            const chip = button("", () => {
              state.stateFilter = state.stateFilter === s ? "" : s;
              for (const c of counts.children) c.setAttribute("aria-pressed", String(c === chip && state.stateFilter === s));
              draw();
            }, "chip badge " + tone(s));
            chip.append(val(s), document.createTextNode(" " + n));
            chip.setAttribute("aria-pressed", "false");
            counts.append(chip);
          }
        }
        const tools = el("div", "tools");
        const search = el("input");
        search.type = "search";
        search.placeholder = "Filter";
        search.setAttribute("aria-label", "Filter rows");
        search.addEventListener("input", () => { state.filter = search.value.toLowerCase(); draw(); });
        tools.append(search);
        const table = el("table", "list");
        const thead = el("thead");
        const hr = el("tr");
        cols.forEach((c, i) => {
          const th = el("th");
          const b = button(c[0], () => {
            state.dir = state.sortCol === i ? -state.dir : 1;
            state.sortCol = i;
            for (const x of hr.querySelectorAll("th button")) x.removeAttribute("aria-sort");
            b.setAttribute("aria-sort", state.dir > 0 ? "ascending" : "descending");
            draw();
          });
          th.append(b);
          hr.append(th);
        });
        if (rowActions.length) hr.append(el("th", "", ""));
        thead.append(hr);
        const tbody = el("tbody");
        table.append(thead, tbody);
        main.append(counts, tools, count, table);
        if (sc.items.length > items.length) main.append(el("p", "note", "Entries that are not objects are not shown here."));
        function draw() {
          let shownRows = rows.filter((r) => {
            if (state.stateFilter && (cell(r.values[stateCol]) || "unknown") !== state.stateFilter) return false;
            if (!state.filter) return true;
            return r.values.some((v) => cell(v).toLowerCase().includes(state.filter));
          });
          if (state.sortCol >= 0) {
            const i = state.sortCol;
            shownRows = shownRows.slice().sort((a, b) => {
              const x = a.values[i], y = b.values[i];
              if (typeof x === "number" && typeof y === "number") return (x - y) * state.dir;
              return cell(x).localeCompare(cell(y), undefined, { numeric: true }) * state.dir;
            });
          }
          const cut = shownRows.length > MAX_ROWS;
          tbody.replaceChildren(...shownRows.slice(0, MAX_ROWS).map((r) => row(r)));
          let c = shownRows.length + " of " + rows.length + " shown";
          if (typeof total === "number" && total > rows.length) c += " \u2014 " + total + " in Arcane; this page has " + rows.length;
          if (cut) c += " \u2014 the first " + MAX_ROWS + " are drawn; filter to see others";
          count.textContent = c;
          reportSize();
        }
        function row(r) {
          const tr = el("tr");
          cols.forEach((c, i) => {
            const td = el("td");
            td.dataset.label = c[0];
            const v = r.values[i];
            if (c[2] === "badge" && v !== undefined) td.append(badge(cell(v)));
            else td.append(val(format(c[2], v)));
            tr.append(td);
          });
          if (rowActions.length) {
            const td = el("td", "actions");
            td.dataset.label = "Actions";
            for (const [label, act, p, destructive, applies] of rowActions) {
              if (applies && !applies(r.it)) continue;
              const b = button(label, () => {
                const pp = p(r.it);
                if (params.environmentId && !pp.environmentId && action !== "environment.list") pp.environmentId = params.environmentId;
                runAction(act, pp, label);
              }, destructive ? "danger" : "");
              b.dataset.action = act;
              if (destructive) b.title = "Arcane asks you to confirm first";
              td.append(b);
            }
            tr.append(td);
          }
          return tr;
        }
        draw();
      },
    };
  }

  // ---- dashboard -----------------------------------------------------------------------------
  // The dashboard's own answer (containers, images, volumes, action items), then the projects
  // that are not fully running, read through the host with project.list.
  function dashboardView(title, params, sc) {
    const o = (v) => (isObj(v) ? v : {});
    const list = (v) => (Array.isArray(v) ? v.filter(isObj) : []);
    return {
      kind: "dashboard", title,
      render(main) {
        const cards = el("div", "cards");
        main.append(cards);
        const add = (label, n, note) => {
          if (n === undefined || n === null) return;
          const c = el("div", "card");
          c.append(el("div", "n", shown(n)), el("div", "l", label));
          if (note) c.append(el("div", "l", note));
          cards.append(c);
        };
        const cc = o(o(sc.containers).counts), iu = o(sc.imageUsageCounts), vu = o(sc.volumeUsageCounts);
        add("containers running", cc.runningContainers, cc.totalContainers !== undefined ? "of " + cc.totalContainers : "");
        add("containers stopped", cc.stoppedContainers);
        add("images", iu.totalImages, typeof iu.totalImageSize === "number" ? bytes(iu.totalImageSize) + " on disk" : "");
        add("images unused", iu.imagesUnused);
        add("volumes", vu.total, vu.unused !== undefined ? vu.unused + " unused" : "");
        const containers = list(o(sc.containers).data);
        const images = list(o(sc.images).data);
        const updates = images.filter((i) => isObj(i.updateInfo) && i.updateInfo.hasUpdate === true);
        add("image updates available", updates.length);
        if (containers.length) {
          main.append(el("h2", "", "Containers by state"));
          const by = new Map();
          for (const c of containers) { const st = String(c.state || "unknown"); by.set(st, (by.get(st) || 0) + 1); }
          const counts = el("div", "counts");
          for (const [st, n] of by) { const b = badge(st); b.append(document.createTextNode(" " + n)); counts.append(b); }
          main.append(counts);
        }
        const items = list(o(sc.actionItems).items);
        if (items.length) {
          main.append(el("h2", "", "Needs attention"));
          for (const it of items) {
            const p = el("p");
            p.append(val(Object.entries(it).filter(([, v]) => scalar(v)).map(([k, v]) => k + ": " + v).join(" \u00b7 ")));
            main.append(p);
          }
        }
        if (updates.length) {
          main.append(el("h2", "", "Images with an update"));
          for (const i of updates) { const p = el("p"); p.append(val(cell(i.repoTags || i.id))); main.append(p); }
        }
        const more = el("div");
        main.append(more);
        const env = params.environmentId ? { environmentId: params.environmentId } : {};
        call("project.list", { ...env, limit: 100 }).then((r) => {
          const ps = isObj(r.structuredContent) ? list(r.structuredContent.items) : [];
          if (r.isError) throw new Error(textOf(r).slice(0, 300));
          more.append(el("h2", "", "Projects not fully running"));
          const bad = ps.filter((p) => !/^running$/i.test(String(p.status || "")));
          if (!bad.length) more.append(el("p", "muted", "None."));
          for (const p of bad) {
            const line = el("p");
            line.append(val(p.name || p.id), document.createTextNode(" "), badge(String(p.status || "unknown")));
            if (p.serviceCount !== undefined) line.append(document.createTextNode(" " + (p.runningCount ?? "?") + " of " + p.serviceCount + " services"));
            more.append(line);
          }
          reportSize();
        }).catch((e) => more.append(el("p", "error-box", "The projects could not be read: " + e.message)));
        reportSize();
      },
    };
  }

  // ---- stats -------------------------------------------------------------------------------
  // Docker's stats objects, computed as `docker stats` does; the host's system stats carry
  // their own percentages.
  function usage(s, prev) {
    const out = {};
    if (isObj(s.cpu_stats) && isObj(s.precpu_stats)) {
      const cpu = s.cpu_stats, pre = s.precpu_stats;
      const d = ((cpu.cpu_usage || {}).total_usage || 0) - ((pre.cpu_usage || {}).total_usage || 0);
      const sys = (cpu.system_cpu_usage || 0) - (pre.system_cpu_usage || 0);
      const n = cpu.online_cpus || ((cpu.cpu_usage || {}).percpu_usage || []).length || 1;
      // As `docker stats`: no time or no work in between reads as 0%.
      out.cpu = sys > 0 && d > 0 ? (d / sys) * n * 100 : 0;
    } else if (typeof s.cpuUsage === "number") out.cpu = s.cpuUsage;
    if (isObj(s.memory_stats) && typeof s.memory_stats.usage === "number") {
      const cache = isObj(s.memory_stats.stats) ? (s.memory_stats.stats.inactive_file || s.memory_stats.stats.cache || 0) : 0;
      out.mem = s.memory_stats.usage - cache;
      out.memLimit = s.memory_stats.limit;
    } else if (typeof s.memoryUsage === "number") { out.mem = s.memoryUsage; out.memLimit = s.memoryTotal; }
    if (isObj(s.networks)) {
      let rx = 0, tx = 0;
      for (const n of Object.values(s.networks)) if (isObj(n)) { rx += n.rx_bytes || 0; tx += n.tx_bytes || 0; }
      out.rx = rx; out.tx = tx;
    }
    const t = Date.parse(s.read || "");
    out.t = isNaN(t) ? Date.now() : t;
    if (prev && out.rx !== undefined && prev.rx !== undefined && out.t > prev.t) {
      out.rxRate = Math.max(0, (out.rx - prev.rx) / ((out.t - prev.t) / 1000));
      out.txRate = Math.max(0, (out.tx - prev.tx) / ((out.t - prev.t) / 1000));
    }
    return out;
  }
  function chart(label) {
    const box = el("div", "chart");
    const now = el("div", "now", "\u2013");
    const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    svg.setAttribute("viewBox", "0 0 100 100");
    svg.setAttribute("preserveAspectRatio", "none");
    const base = document.createElementNS("http://www.w3.org/2000/svg", "line");
    for (const [k, v] of [["x1", 0], ["y1", 100], ["x2", 100], ["y2", 100]]) base.setAttribute(k, String(v));
    const a = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
    const b = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
    b.setAttribute("class", "b");
    svg.append(base, a, b);
    box.append(el("div", "l muted", label), now, svg);
    return {
      box,
      draw(series, fmt, series2) {
        const all = series.concat(series2 || []).filter((x) => typeof x === "number");
        const max = Math.max(1e-9, ...all);
        const pts = (s) => s.map((v, i) => (s.length < 2 ? 50 : (i / (s.length - 1)) * 100).toFixed(2) + "," + (100 - ((v || 0) / max) * 95).toFixed(2)).join(" ");
        a.setAttribute("points", pts(series));
        b.setAttribute("points", series2 ? pts(series2) : "");
        now.textContent = fmt(series[series.length - 1], series2 ? series2[series2.length - 1] : undefined);
      },
    };
  }
  function statsView(title, action, params, sc) {
    const points = [];
    let prev = null;
    const addSamples = (samples) => {
      for (const s of samples) if (isObj(s)) { const u = usage(s, prev); prev = u; points.push(u); }
      while (points.length > MAX_CHART_POINTS) points.shift();
    };
    addSamples(sc.samples);
    return {
      kind: "stats", title,
      render(main) {
        const tools = el("div", "tools");
        const toggle = button("Pause", () => (live ? pause() : resume()));
        toggle.dataset.role = "live";
        const info = el("span", "muted refreshes");
        tools.append(toggle, info);
        const cpu = chart("CPU (100% = one CPU)"), mem = chart("Memory"), net = chart("Network receive / send per second");
        const charts = el("div", "charts");
        charts.append(cpu.box, mem.box, net.box);
        main.append(tools, charts);
        if (sc.truncated) main.append(el("p", "note", shown(sc.truncated)));
        let refreshes = 0;
        const draw = () => {
          cpu.draw(points.map((p) => p.cpu), (v) => (typeof v === "number" ? v.toFixed(2) + " %" : "not reported"));
          mem.draw(points.map((p) => p.mem), (v) => (typeof v === "number" ? bytes(v) + (points.length && points[points.length - 1].memLimit ? " of " + bytes(points[points.length - 1].memLimit) : "") : "not reported"));
          net.draw(points.map((p) => p.rxRate), (r, t) => (typeof r === "number" ? bytes(r) + "/s \u2193  " + bytes(t) + "/s \u2191" : "after two samples"), points.map((p) => p.txRate));
          info.textContent = refreshes + " refresh(es), every " + REFRESH_MS / 1000 + " s while shown";
          main.dataset.refreshes = String(refreshes);
          reportSize();
        };
        const schedule = () => { if (live && !live.stopped) live.timer = setTimeout(tick, REFRESH_MS); };
        const tick = async () => {
          const mine = live;
          if (!mine || mine.stopped || document.visibilityState === "hidden") return;
          try {
            const r = await call(action, { ...params, samples: 1 });
            if (mine.stopped) return;
            refreshes++;
            const s = isObj(r.structuredContent) ? r.structuredContent.samples : null;
            if (r.isError || !Array.isArray(s)) { status("Refresh failed: " + textOf(r).slice(0, 300), true); pause(); return; }
            addSamples(s);
            draw();
            if (refreshes >= MAX_REFRESHES) { pause(); status("Paused after " + MAX_REFRESHES + " refreshes."); return; }
          } catch (e) { status("Refresh failed: " + e.message, true); pause(); return; }
          schedule();
        };
        function pause() { stopLive(); toggle.textContent = "Resume"; main.dataset.live = "off"; }
        function resume() {
          stopLive();
          refreshes = 0;
          live = { timer: 0, stopped: false, onPause: pause };
          toggle.textContent = "Pause";
          main.dataset.live = "on";
          schedule();
        }
        draw();
        resume();
      },
    };
  }

  // ---- logs --------------------------------------------------------------------------------
  const STDERR = "[STDERR] ";
  function logsView(title, action, params, sc) {
    let lines = sc.lines.map(String);
    let truncated = sc.truncated;
    return {
      kind: "logs", title,
      render(main) {
        const tools = el("div", "tools");
        const search = el("input");
        search.type = "search";
        search.placeholder = "Search";
        search.setAttribute("aria-label", "Search the lines");
        const only = el("label");
        const onlyBox = el("input");
        onlyBox.type = "checkbox";
        only.append(onlyBox, document.createTextNode(" only matches"));
        const wrapL = el("label");
        const wrapBox = el("input");
        wrapBox.type = "checkbox";
        wrapL.append(wrapBox, document.createTextNode(" wrap"));
        const tail = el("select");
        tail.setAttribute("aria-label", "Lines");
        for (const n of [50, 200, 1000]) { const o = el("option", "", "last " + n); o.value = String(n); tail.append(o); }
        tail.value = String([50, 200, 1000].includes(params.tail) ? params.tail : 200);
        const follow = button("Follow", () => (live ? unfollow() : startFollow()));
        follow.dataset.role = "live";
        const copy = button("Copy", async () => {
          const text = lines.join("\n");
          try { await navigator.clipboard.writeText(text); status("Copied " + lines.length + " line(s)."); }
          catch (_) { status("The host does not allow copying; select the lines instead.", true); }
        });
        const stderrCount = el("span", "muted");
        tools.append(search, only, wrapL, tail, follow, copy, stderrCount);
        const log = el("div", "log");
        log.setAttribute("role", "log");
        const note = el("p", "note");
        main.append(tools, log);
        const draw = () => {
          const q = search.value.toLowerCase();
          const frag = [];
          let errs = 0, hits = 0;
          for (const l of lines) {
            const err = l.startsWith(STDERR);
            if (err) errs++;
            const d = el("div", "ln" + (err ? " stderr" : ""));
            d.textContent = shownLog(l);
            if (q) {
              const hit = l.toLowerCase().includes(q);
              if (hit) { hits++; d.classList.add("hit"); } else if (onlyBox.checked) d.classList.add("miss");
            }
            frag.push(d);
          }
          log.replaceChildren(...frag);
          stderrCount.textContent = lines.length + " line(s), " + errs + " on stderr" + (q ? ", " + hits + " match(es)" : "");
          if (truncated) { note.textContent = shown(truncated); if (!note.isConnected) main.append(note); }
          else note.remove();
          if (live) log.scrollTop = log.scrollHeight;
          reportSize();
        };
        const reload = async () => {
          const r = await call(action, { ...params, tail: Number(tail.value) });
          const sc2 = isObj(r.structuredContent) ? r.structuredContent : null;
          if (r.isError || !sc2 || !Array.isArray(sc2.lines)) throw new Error(textOf(r).slice(0, 300) || "no lines");
          lines = sc2.lines.map(String);
          truncated = sc2.truncated;
          draw();
        };
        const tick = async () => {
          const mine = live;
          if (!mine || mine.stopped || document.visibilityState === "hidden") return;
          try { await reload(); } catch (e) { status("Follow stopped: " + e.message, true); unfollow(); return; }
          if (mine.stopped) return;
          mine.count++;
          if (mine.count >= MAX_REFRESHES) { unfollow(); status("Follow paused after " + MAX_REFRESHES + " refreshes."); return; }
          mine.timer = setTimeout(tick, REFRESH_MS);
        };
        function startFollow() {
          stopLive();
          live = { timer: 0, stopped: false, count: 0, onPause: unfollow };
          follow.textContent = "Stop following";
          live.timer = setTimeout(tick, 0);
        }
        function unfollow() { stopLive(); follow.textContent = "Follow"; }
        search.addEventListener("input", draw);
        onlyBox.addEventListener("change", draw);
        wrapBox.addEventListener("change", () => { log.classList.toggle("wrap", wrapBox.checked); reportSize(); });
        tail.addEventListener("change", () => reload().catch((e) => status("Reload failed: " + e.message, true)));
        draw();
      },
    };
  }

  // ---- objects -----------------------------------------------------------------------------
  // Readable sections; what is not shown (too deep, too long, too many) is named, never
  // silently dropped — the text result and the action's JSON have it.
  const MAX_DEPTH = 3, MAX_TEXT = 2000, MAX_ITEMS = 50;
  function objectView(title, action, sc, text) {
    return {
      kind: "object", title,
      render(main) {
        const left = [];
        main.append(section(sc, 0, "", left));
        if (left.length) {
          const n = el("div", "note");
          n.append(el("strong", "", "Not shown here: "), val(left.join(", ")));
          n.append(document.createTextNode(". The text result (and the action's JSON) has them."));
          main.append(n);
        }
        if (!Object.keys(sc).length && text) { const pre = el("pre", "text"); pre.textContent = shownLog(text); main.append(pre); }
      },
    };
  }
  function pair(dl, k) {
    const dt = el("dt"), dd = el("dd");
    dt.append(val(k));
    dl.append(dt, dd);
    return dd;
  }
  function section(obj, depth, path, left) {
    const dl = el("dl");
    const subs = [];
    for (const [k, v] of Object.entries(obj)) {
      if (v === null || v === undefined || v === "" || (Array.isArray(v) && !v.length) || (isObj(v) && !Object.keys(v).length)) continue;
      const here = path ? path + "." + k : k;
      if (scalar(v)) {
        const s = String(v);
        const dd = pair(dl, k);
        if (/^(state|status|health)$/i.test(k)) dd.append(badge(s));
        else if (/size|bytes/i.test(k) && typeof v === "number") dd.append(val(bytes(v)));
        else if (s.length > MAX_TEXT) { dd.append(val(s.slice(0, MAX_TEXT) + "\u2026")); left.push(here + " (cut at " + MAX_TEXT + " of " + s.length + " characters)"); }
        else dd.append(val(s));
      } else if (Array.isArray(v) && v.every(scalar)) {
        pair(dl, k).append(val(v.slice(0, MAX_ITEMS).join(", ")));
        if (v.length > MAX_ITEMS) left.push(here + " (" + (v.length - MAX_ITEMS) + " more)");
      } else if (depth + 1 >= MAX_DEPTH) {
        left.push(here);
      } else if (Array.isArray(v)) {
        const sec = el("section", "obj");
        sec.append(el("h2", "", null));
        sec.firstChild.append(val(k + " (" + v.length + ")"));
        v.slice(0, MAX_ITEMS).forEach((x, i) => {
          if (isObj(x)) sec.append(section(x, depth + 1, here + "[" + i + "]", left));
          else { const p = el("p"); p.append(val(cell(x))); sec.append(p); }
        });
        if (v.length > MAX_ITEMS) left.push(here + " (" + (v.length - MAX_ITEMS) + " more)");
        subs.push(sec);
      } else {
        const sec = el("section", "obj");
        sec.append(el("h2", "", null));
        sec.firstChild.append(val(k));
        sec.append(section(v, depth + 1, here, left));
        subs.push(sec);
      }
    }
    const wrap = el("div");
    wrap.append(dl, ...subs);
    return wrap;
  }

  init();
})();
