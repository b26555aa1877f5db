// Drives the /memories page in headless Chromium for tests/review/test_memories_browser.py.
// argv: baseUrl configJson chromiumPath [screenshotDir]
// configJson: {adaToken, graceToken, leedsId, londonId, peanuts, passport, payload, leeds, london}
// Ada's flow runs with JavaScript disabled (the page needs none); a second browser context with
// JavaScript enabled checks that a memory holding markup shows as text and runs nothing.
// Prints one JSON object describing what the pages showed; exits 1 with a message on failure.
"use strict";
const { chromium } = require("playwright-core");

const [, , baseUrl, configJson, chromiumPath, shotDir] = process.argv;
const cfg = JSON.parse(configJson);

async function shot(page, name) {
  if (shotDir) await page.screenshot({ path: `${shotDir}/${name}.png`, fullPage: true });
}

// Light and dark, wide and narrow (a phone's width), of the page as it is now.
async function shots(page, name) {
  if (!shotDir) return;
  for (const scheme of ["light", "dark"]) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.setViewportSize({ width: 1280, height: 800 });
    await shot(page, `${name}-${scheme}`);
    await page.setViewportSize({ width: 390, height: 844 });
    await shot(page, `${name}-${scheme}-narrow`);
  }
  await page.emulateMedia({ colorScheme: "light" });
  await page.setViewportSize({ width: 1280, height: 800 });
}

function watch(page, result) {
  page.setDefaultTimeout(15000);
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") result.console.push(m.text());
  });
  page.on("request", (r) => {
    if (!r.url().startsWith(baseUrl)) result.foreign.push(r.url());
  });
  page.on("dialog", async (d) => {
    result.dialogs += 1;
    await d.dismiss();
  });
}

async function signIn(page, token) {
  await page.goto(`${baseUrl}/memories`);
  await page.getByLabel("Token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL("**/memories?notice=signed-in");
}

const listed = (page) => page.locator("li.memory .statement").allInnerTexts();
const item = (page, text) => page.locator("li.memory", { hasText: text });

async function adaFlow(page, result) {
  await page.goto(`${baseUrl}/memories`);
  await shots(page, "memories-sign-in");
  await signIn(page, cfg.adaToken);
  result.greeting = await page.locator("h1").innerText();
  result.listed = await listed(page);
  result.states = [];
  for (const li of await page.locator("li.memory").all()) {
    result.states.push(await li.getAttribute("data-state"));
  }
  result.nav = await page.getByRole("navigation", { name: "Your pages" }).innerText();
  await shots(page, "memories-list");

  // Search (a GET form: Enter submits it, no script involved).
  await page.getByLabel("Search").fill("Leeds");
  await page.getByLabel("Search").press("Enter");
  await page.waitForURL(/\/memories\?q=Leeds/);
  result.searched = await listed(page);
  await shots(page, "memories-search");

  // History of the superseded memory, reached from the list.
  await page.goto(`${baseUrl}/memories`);
  await item(page, cfg.london).getByRole("link", { name: "History" }).click();
  await page.waitForURL(`**/memories/${encodeURIComponent(cfg.londonId)}`);
  result.history = await page.locator("li.entry").allInnerTexts();
  result.historyState = await page.locator("section.card .tag").first().innerText();
  await shots(page, "memories-history");

  // Forget with the keyboard alone, then restore from the memory's own page.
  await page.goto(`${baseUrl}/memories`);
  await item(page, cfg.peanuts).getByRole("button", { name: "Forget" }).focus();
  await page.keyboard.press("Enter");
  await page.waitForURL("**/memories?notice=forgotten");
  result.forgottenNotice = await page.locator(".notice").innerText();
  result.forgottenState = await item(page, cfg.peanuts).getAttribute("data-state");
  await item(page, cfg.peanuts).getByRole("link", { name: "History" }).click();
  await page.getByRole("button", { name: "Restore" }).click();
  await page.waitForURL("**?notice=restored");
  result.restoredNotice = await page.locator(".notice").innerText();
  result.restoredEntries = await page.locator("li.entry").allInnerTexts();

  // Erase asks once more, on a page of its own.
  await page.goto(`${baseUrl}/memories`);
  await item(page, cfg.passport).getByRole("link", { name: "Erase…" }).click();
  await page.waitForURL("**/erase");
  result.question = await page.locator("h1").innerText();
  await shots(page, "memories-erase-question");
  await page.getByRole("button", { name: "Erase for good" }).click();
  await page.waitForURL("**/memories?notice=erased");
  result.erasedNotice = await page.locator(".notice").innerText();
  result.afterErase = await listed(page);

  result.cookies = (await page.context().cookies(`${baseUrl}/memories`)).map((c) => ({
    name: c.name,
    httpOnly: c.httpOnly,
    sameSite: c.sameSite,
    secure: c.secure,
  }));
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.waitForURL("**/memories?notice=signed-out");
  result.signedOut = await page.locator(".notice").innerText();
}

async function graceFlow(page, result) {
  await signIn(page, cfg.graceToken);
  result.grace = await listed(page);
  await page.getByLabel("Search").fill("Ada Leeds London peanuts passport");
  await page.getByLabel("Search").press("Enter");
  await page.waitForURL(/\/memories\?q=/);
  result.graceSearch = await listed(page);
  const guessed = await page.goto(`${baseUrl}/memories/${encodeURIComponent(cfg.leedsId)}`);
  result.graceGuess = { status: guessed.status(), text: await page.locator("main").innerText() };
  await shots(page, "memories-isolation");
}

async function payloadCheck(page, result) {
  await signIn(page, cfg.adaToken);
  result.titleBefore = await page.title();
  result.payloadShown = await item(page, "onerror").locator(".statement").innerText();
  result.injected = await page.locator("main img, main script, main iframe").count();
  result.pwned = await page.evaluate(() => window.__pwned === undefined ? null : window.__pwned);
  result.titleAfter = await page.title();
}

async function run(browser, options, flow, result) {
  const context = await browser.newContext(options);
  const page = await context.newPage();
  watch(page, result);
  try {
    await flow(page, result);
  } catch (e) {
    // Say where the browser was and what it showed: the failing page explains most failures.
    const text = await page.locator("main").innerText().catch(() => "");
    throw new Error(`${e.message}\nat ${page.url()}:\n${text}`);
  } finally {
    await context.close();
  }
}

async function main() {
  const browser = await chromium.launch({
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
  const result = { console: [], foreign: [], dialogs: 0 };
  try {
    await run(browser, { javaScriptEnabled: false }, adaFlow, result);
    await run(browser, { javaScriptEnabled: false }, graceFlow, result);
    await run(browser, { javaScriptEnabled: true }, payloadCheck, result);
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(result));
}

main().catch((e) => {
  process.stderr.write(`${(e && e.stack) || e}\n`);
  process.exit(1);
});
