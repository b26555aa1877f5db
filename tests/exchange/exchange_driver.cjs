// Drives the static ACX Exchange in headless Chromium for tests/exchange/test_exchange_browser.py.
// argv: baseUrl pagesJson chromiumPath [screenshotDir]
// For each page path: open it, wait for the browser verdict, and report what the page showed.
// Prints one JSON object; exits 1 with a message on failure.
"use strict";
const { chromium } = require("playwright-core");

const [, , baseUrl, pagesJson, chromiumPath, shotDir] = process.argv;

async function main() {
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
  });
  const result = { console: [], foreign: [], pages: {} };
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    page.setDefaultTimeout(20000);
    page.on("console", (m) => {
      if (m.type() === "error" || m.type() === "warning") result.console.push(m.text());
    });
    page.on("pageerror", (e) => result.console.push(String(e)));
    page.on("request", (r) => {
      if (!r.url().startsWith(baseUrl)) result.foreign.push(r.url());
    });
    for (const path of JSON.parse(pagesJson)) {
      await page.goto(`${baseUrl}/${path}`);
      const seen = { title: await page.title() };
      const panel = page.locator(".verify[data-src]");
      if ((await panel.count()) === 1) {
        await page.waitForFunction(() => {
          const p = document.querySelector(".verify[data-src]");
          return p && !["idle", "running"].includes(p.dataset.state);
        });
        seen.state = await panel.getAttribute("data-state");
        seen.verdict = await panel.locator(".verdict-title").innerText();
        seen.lines = await panel.locator(".verdict-lines li").allInnerTexts();
        seen.notice = (await page.locator(".notice").count()) ? await page.locator(".notice").innerText() : null;
      } else {
        seen.cards = await page.locator(".card").count();
        await page.fill("#search", "delivery");
        seen.filtered = await page.locator(".card:not([hidden])").count();
        await page.fill("#search", "");
      }
      if (shotDir) {
        const name = path.replace(/\/index\.html$/, "").replace(/[^a-z0-9]+/gi, "-") || "index";
        await page.screenshot({ path: `${shotDir}/${name}.png`, fullPage: true });
      }
      result.pages[path] = seen;
    }
    const jcs = await page.evaluate(() => window.acxExchange.jcs({ b: [1e21, 0.1, -0, "\u00e9\u2028"], a: { "\u20ac": 1, "\u00e9": null } }));
    result.jcs = jcs;
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(result));
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e));
  process.exit(1);
});
