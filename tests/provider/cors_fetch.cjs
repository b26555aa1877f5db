// A browser runtime in headless Chromium: a page on one origin fetches discovery, the key list,
// the export, a diff and posts a correction to the provider on another origin, with its bearer
// token. For tests/provider/test_provider_cors.py.
// argv: pageUrl providerUrl token chromiumPath (the page is served by the test on loopback, so
// both ends sit in the same address space and Chromium's local-network checks stay out of it)
// Prints one JSON object: what each fetch saw (status and error code, or the failure).
"use strict";
const { chromium } = require("playwright-core");

const [, , pageUrl, providerUrl, token, chromiumPath] = process.argv;

async function main() {
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ["--no-sandbox", "--headless", "--disable-gpu", "--no-first-run"],
  });
  try {
    const page = await browser.newPage();
    await page.goto(pageUrl);
    const result = await page.evaluate(
      async ({ providerUrl, token }) => {
        const auth = { Authorization: `Bearer ${token}`, "Engram-Version": "0.1" };
        async function probe(path, init) {
          try {
            const response = await fetch(providerUrl + path, init);
            const body = await response.json();
            return {
              status: response.status,
              code: body.error ? body.error.code : null,
              engram_version: body.engram_version || null,
              request_id: response.headers.get("X-Request-Id") !== null,
            };
          } catch (e) {
            return { failed: String(e) };
          }
        }
        return {
          discovery: await probe("/.well-known/engram", {}),
          keys: await probe("/.well-known/engram-keys", {}),
          context: await probe("/v1/context?scope=professional", { headers: auth }),
          unauthenticated: await probe("/v1/context", { headers: { Authorization: "Bearer nope" } }),
          diff: await probe("/v1/context/diff?since=2020-01-01T00:00:00Z", { headers: auth }),
          correct: await probe("/v1/context/correct", {
            method: "POST",
            headers: { ...auth, "Content-Type": "application/json", "Idempotency-Key": "k-1" },
            body: JSON.stringify({ belief_id: "x", new_value: "y", runtime_id: "browser" }),
          }),
        };
      },
      { providerUrl, token },
    );
    process.stdout.write(JSON.stringify(result));
  } finally {
    await browser.close();
  }
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e) + "\n");
  process.exit(1);
});
