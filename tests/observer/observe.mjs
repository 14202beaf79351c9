// Loads Arbor's observer page in headless Chromium (Debian's `chromium`, driven by
// playwright-core), waits until the page shows what the test expects (or a bound passes),
// writes a screenshot, and prints what the DOM shows as one line of JSON on stdout. The
// Rust test (crates/arbor-http/tests/it/the_observer_shows_the_live_tree_in_a_browser.rs)
// asserts on that line; this script decides nothing.
//
// Usage: node observe.mjs <page url> <screenshot path> <expected JSON>
//   expected: {"connections": {"tenant": n, ...}, "restarted": ["tenant", ...]}
// Env: CHROMIUM (default /usr/bin/chromium).

import { chromium } from "playwright-core";

const [url, screenshot, expectedJson] = process.argv.slice(2);
if (!url || !screenshot || !expectedJson) {
  console.error("usage: node observe.mjs <page url> <screenshot path> <expected JSON>");
  process.exit(2);
}
const expected = JSON.parse(expectedJson);
const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";

// What the page shows, read from its DOM only (the same elements a person reads).
function facts() {
  const rows = [...document.querySelectorAll("#tenants tbody tr")];
  const tenants = {};
  for (const row of rows) {
    tenants[row.dataset.tenant] = {
      connections: Number(row.querySelector(".connections").textContent),
      admitted: Number(row.querySelector(".admitted").textContent),
      in_flight: row.querySelector(".in-flight").textContent,
      requests_per_s: Number(row.querySelector(".rps").textContent),
    };
  }
  const nodes = [...document.querySelectorAll("#tree li.node")];
  const byId = id => nodes.find(n => n.dataset.id === id);
  const tree = {};
  for (const node of nodes.filter(n => n.dataset.id.startsWith("tenant:"))) {
    const name = node.dataset.id.slice("tenant:".length);
    const crash = node.querySelector(":scope > .row .crash");
    tree[name] = {
      restarts: Number(node.dataset.restarts),
      last_crash: crash ? crash.textContent : null,
      connections: node.querySelectorAll("li.node[data-kind=connection]").length,
    };
  }
  return {
    status: document.getElementById("status").textContent,
    updates: Number(document.body.dataset.updates || 0),
    tenants,
    tree,
    root: byId(nodes[0]?.dataset.id)?.dataset.id ?? null,
    requests: document.querySelectorAll("#tree li.node[data-kind=request]").length,
    streams: document.querySelectorAll("#tree li.node[data-kind=stream]").length,
    tasks: document.querySelectorAll("#tree li.node[data-kind=task]").length,
    chart_lines: document.querySelectorAll("#chart polyline").length,
    summary: document.getElementById("summary").textContent,
  };
}

function satisfied(seen, expected) {
  if (seen.updates < 2 || seen.status !== "live") return false;
  for (const [tenant, n] of Object.entries(expected.connections || {})) {
    if (seen.tenants[tenant]?.connections !== n) return false;
  }
  for (const tenant of expected.restarted || []) {
    if (!(seen.tree[tenant]?.restarts >= 1)) return false;
  }
  return seen.chart_lines >= Object.keys(expected.connections || {}).length;
}

const browser = await chromium.launch({ executablePath, headless: true, args: ["--no-sandbox"] });
let seen = null;
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const errors = [];
  page.on("pageerror", e => errors.push(String(e)));
  await page.goto(url, { waitUntil: "load", timeout: 15000 });
  const deadline = Date.now() + 20000;
  for (;;) {
    seen = await page.evaluate(facts);
    if (satisfied(seen, expected) || Date.now() > deadline) break;
    await page.waitForTimeout(200);
  }
  seen.errors = errors;
  await page.screenshot({ path: screenshot, fullPage: true });
  seen.screenshot = screenshot;
} finally {
  await browser.close();
}
console.log(JSON.stringify(seen));
