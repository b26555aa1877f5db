// Drives the review page in headless Chromium for tests/review/test_review_browser.py.
// argv: baseUrl token correctionId beliefId userDataDir chromiumPath [screenshotDir]
// Prints one JSON object describing what the page showed; exits 1 with a message on failure.
"use strict";
const { chromium } = require("playwright-core");

const [, , baseUrl, token, correctionId, beliefId, userDataDir, chromiumPath, shotDir] =
  process.argv;

async function shot(page, name) {
  if (shotDir) await page.screenshot({ path: `${shotDir}/${name}.png`, fullPage: true });
}

async function main() {
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: chromiumPath,
    headless: true,
    args: [
      "--no-sandbox",
      "--headless",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--no-first-run",
    ],
  });
  const result = { console: [], foreign: [] };
  const page = context.pages()[0] || (await context.newPage());
  try {
    page.setDefaultTimeout(15000);
    page.on("console", (m) => {
      if (m.type() === "error" || m.type() === "warning") result.console.push(m.text());
    });
    page.on("request", (r) => {
      if (!r.url().startsWith(baseUrl)) result.foreign.push(r.url());
    });

    await page.goto(`${baseUrl}/review`);
    await shot(page, "review-sign-in");
    await page.getByLabel("Token").fill(token);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL("**/review?notice=signed-in");
    result.greeting = await page.locator("h1").innerText();

    const card = page.locator(`#correction-${correctionId}`);
    result.now = await card.locator(".side.now .statement").innerText();
    result.proposed = await card.locator(".side.proposed .statement").innerText();
    await shot(page, "review-dashboard");

    await card.getByRole("button", { name: "Confirm" }).click();
    await page.waitForURL("**/review?notice=confirmed");
    result.notice = await page.locator(".notice").innerText();
    result.pendingAfter = await page.locator("article.pending").count();

    await page.locator(`a[href="/review/beliefs/${beliefId}"]`).first().click();
    await page.waitForURL(`**/review/beliefs/${beliefId}`);
    result.history = await page.locator("li.entry").allInnerTexts();
    await shot(page, "review-history");

    result.cookies = (await context.cookies(`${baseUrl}/review`)).map((c) => ({
      name: c.name,
      httpOnly: c.httpOnly,
      sameSite: c.sameSite,
      secure: c.secure,
    }));

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL("**/review?notice=signed-out");
    result.signedOut = await page.getByLabel("Token").isVisible();
  } catch (e) {
    // Say where the browser was and what it showed: the failing page explains most failures.
    const text = await page.locator("main").innerText().catch(() => "");
    throw new Error(`${e.message}\nat ${page.url()}:\n${text}`);
  } finally {
    await context.close();
  }
  process.stdout.write(JSON.stringify(result));
}

main().catch((e) => {
  process.stderr.write(`${(e && e.stack) || e}\n`);
  process.exit(1);
});
