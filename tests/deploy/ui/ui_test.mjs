// The router's live page in headless Chromium (Debian's, driven by playwright-core): it loads on
// the admin listener, shows the test's two replicas, updates after traffic (requests routed, the
// latest decisions, the fleet hit rate), drains and undrains a replica with the admin token, and
// is not on the traffic port without --ui-public. Screenshots (laptop and phone) go to OUT_DIR.
//   node ui_test.mjs BUILD_DIR OUT_DIR
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { chromium } from "playwright-core";

const [build, outDir] = process.argv.slice(2);
const scale = Number(process.env.LANES_TIME_SCALE || 1);
const procs = [];
const freePort = () =>
  new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
const start = (bin, args) => {
  const p = spawn(path.join(build, bin), args, { stdio: ["ignore", "ignore", "inherit"] });
  procs.push(p);
  return p;
};
const until = async (what, pred, seconds = 10) => {
  const end = Date.now() + seconds * 1000 * scale;
  for (;;) {
    try {
      if (await pred()) return;
    } catch {}
    if (Date.now() > end) throw new Error(`${what}: not within ${seconds * scale} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
};
const check = (cond, what) => {
  if (!cond) throw new Error(what);
  console.log("ok:", what);
};

let browser;
try {
  const replicas = [await freePort(), await freePort()];
  replicas.forEach((p, i) =>
    start("replica/lanes-replica", ["--host", "127.0.0.1", "--port", String(p), "--seed", String(i),
      "--backend", "sim", "--sim-speedup", "8", "--kv-blocks", "1024"]));
  const port = await freePort(), admin = await freePort();
  start("router/lanes-router", ["--host", "127.0.0.1", "--port", String(port), "--admin-port",
    String(admin), "--admin-token", "ui-test-token", "--access-log", "false",
    "--scrape-interval", "100ms", ...replicas.flatMap((p) => ["--replica", `http://127.0.0.1:${p}`])]);
  await until("router ready", async () => (await fetch(`http://127.0.0.1:${port}/readiness`)).ok);
  const urls = replicas.map((p) => `http://127.0.0.1:${p}`);

  check((await fetch(`http://127.0.0.1:${port}/ui`)).status === 404, "no /ui on the traffic port without --ui-public");

  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(`http://127.0.0.1:${admin}/ui`);
  await page.waitForSelector("#replicas tbody tr", { timeout: 10000 * scale });
  const rows = await page.$$eval("#replicas tbody tr", (trs) => trs.map((t) => t.dataset.replica));
  check(JSON.stringify(rows.sort()) === JSON.stringify([...urls].sort()), "one row for each of the test's replicas");

  // Traffic: 8 groups of shared-prefix prompts, 5 each, over about 3 s.
  for (let i = 0; i < 40; i++) {
    const prompt = `System prompt of group ${i % 8}: ` + "you answer briefly and well. ".repeat(12) + `Question ${i}?`;
    const r = await fetch(`http://127.0.0.1:${port}/v1/completions`, {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ prompt, max_tokens: 4 }),
    });
    await r.text();
    await new Promise((done) => setTimeout(done, 60)); // over a few of the page's updates
  }
  await until("the page shows the traffic", async () =>
    (await page.textContent("#status")).includes("40 requests routed"));
  const decisions = await page.$$eval("#decisions tbody tr", (trs) => trs.length);
  check(decisions === 20, `the latest decisions listed (${decisions})`);
  const reasons = await page.$$eval("#decisions tbody tr td:nth-child(3)", (tds) => tds.map((t) => t.textContent));
  check(reasons.some((r) => r.startsWith("prefix_match")), "decisions name their reasons (prefix_match among them)");
  const estimates = await page.$$eval("#decisions tbody tr td:nth-child(8)", (tds) => tds.map((t) => t.title));
  check(estimates.some((t) => / ms \(\d+ blocks cached, \d+ tokens queued\)/.test(t)),
        "decisions show each candidate's estimate (prefix policy)");
  await until("each replica's models are shown", async () =>
    (await page.$$eval("#replicas tbody td.models", (tds) => tds.map((t) => t.textContent)))
      .every((t) => t.length > 0 && t !== "–"));
  await until("the hit rate is shown", async () => (await page.textContent("#hit")).includes("%"));
  console.log("fleet hit rate on the page:", await page.textContent("#hit"));
  await until("the request-rate chart has points", async () =>
    (await page.textContent("#rate")) !== "–", 5);

  // Drain and undrain with the admin token.
  check(await page.isVisible("#adminbox"), "the admin token field is shown on the admin listener");
  await page.fill("#token", "ui-test-token");
  await until("drain buttons", async () => (await page.$$("#replicas button")).length === 2);
  await page.click(`#replicas tr[data-replica="${urls[0]}"] button`);
  await until("the replica shows draining", async () =>
    (await page.textContent(`#replicas tr[data-replica="${urls[0]}"] .pill`)) === "draining");
  const list = await (await fetch(`http://127.0.0.1:${admin}/admin/replicas`, {
    headers: { Authorization: "Bearer ui-test-token" } })).json();
  check(list.find((r) => r.url === urls[0]).draining === true, "the drain button drained it in the router");
  await page.$$eval(".scroll", (els) => els.forEach((e) => (e.scrollLeft = 0)));
  await page.screenshot({ path: path.join(outDir, "ui-laptop.png"), fullPage: true });
  await page.click(`#replicas tr[data-replica="${urls[0]}"] button`);
  await until("the replica shows up again", async () =>
    (await page.textContent(`#replicas tr[data-replica="${urls[0]}"] .pill`)) === "up");

  const phone = await browser.newPage({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2 });
  await phone.goto(`http://127.0.0.1:${admin}/ui`);
  await phone.waitForSelector("#replicas tbody tr");
  await until("the phone page updates", async () => (await phone.textContent("#rate")) !== "–");
  const overflow = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(overflow <= 0, `the phone page does not scroll sideways (tables scroll inside their cards; ${overflow} px)`);
  await phone.screenshot({ path: path.join(outDir, "ui-phone.png"), fullPage: true });
  check(errors.length === 0, `no script errors (${errors.join("; ")})`);
  console.log("screenshots:", path.join(outDir, "ui-laptop.png"), path.join(outDir, "ui-phone.png"));
} finally {
  if (browser) await browser.close();
  for (const p of procs) p.kill("SIGTERM");
}
