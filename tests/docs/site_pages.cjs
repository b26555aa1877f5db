// Opens pages of the built documentation site in headless Chromium for
// tests/docs/test_docs_offline.py, in the light and the dark palette, and reports every request
// that leaves the loopback server, every failed request, and the colour scheme each page used.
// argv: baseUrl chromiumPath screenshotDir(or "") page...
"use strict";
const { chromium } = require("playwright-core");

const [, , baseUrl, chromiumPath, shotDir, ...pages] = process.argv;

async function main() {
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--no-first-run"],
  });
  const origin = new URL(baseUrl).origin;
  const report = { foreign: [], failed: [], visited: [], schemes: {} };
  try {
    for (const scheme of ["light", "dark"]) {
      const context = await browser.newContext({ colorScheme: scheme, viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      page.on("request", (r) => {
        const url = r.url();
        if (!url.startsWith(origin) && !url.startsWith("data:") && !url.startsWith("blob:")) {
          report.foreign.push(url);
        }
      });
      // A request the browser itself cancels because the next page.goto() navigated away (the
      // favicon, fetched after "networkidle") fails with net::ERR_ABORTED: that is the driver
      // moving on, not the site failing, so it is not reported. Every other failure, and every
      // answer of 400 or more, is.
      page.on("requestfailed", (r) => {
        const error = r.failure().errorText;
        if (error !== "net::ERR_ABORTED") report.failed.push(`${r.url()}: ${error}`);
      });
      page.on("response", (r) => { if (r.status() >= 400) report.failed.push(`${r.url()}: ${r.status()}`); });
      for (const path of pages) {
        await page.goto(baseUrl + path, { waitUntil: "networkidle" });
        const used = await page.evaluate(() => document.body.getAttribute("data-md-color-scheme"));
        report.schemes[`${path}:${scheme}`] = used;
        report.visited.push(`${path}:${scheme}`);
        if (shotDir) {
          const name = (path.replace(/\/$/, "").replace(/\//g, "_") || "home") + `-${scheme}.png`;
          await page.screenshot({ path: `${shotDir}/${name}`, fullPage: false });
        }
      }
      await context.close();
    }
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(report));
}

main().catch((e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); });
