// Shared by the browser scenarios: launches Debian's Chromium, and gives a
// scenario its page, named steps, screenshots (desktop and phone width) and
// a uniform ending. Usage in a scenario:
//   const s = await start();            // reads <base-url> <screenshot-dir>
//   s.step("..."); await s.page.goto(s.base + "/"); await s.shot("name");
//   await s.finish(async () => { ...steps... });
import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

/// Debian's Chromium, headless, with one page whose errors are collected.
export async function launch() {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  // Playwright's 30 s default is a hang detector; CI runs these beside a
  // hundred other tests on two cores, where one step has taken longer. A real
  // failure is still a wrong page, found by the step's own check.
  context.setDefaultTimeout(90_000);
  context.setDefaultNavigationTimeout(90_000);
  const page = await context.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("dialog", (d) => d.accept());
  return { browser, context, page, problems };
}

export async function start() {
  const [base, shots] = process.argv.slice(2);
  if (!base || !shots) {
    console.error("usage: node <scenario>.mjs <base-url> <screenshot-dir>");
    process.exit(2);
  }
  mkdirSync(shots, { recursive: true });
  const { browser, context, page, problems } = await launch();
  let stepName = "start";
  const began = Date.now();
  const s = {
    base, shots, browser, context, page, problems,
    // Each step with the seconds since the scenario began: a step that
    // takes far longer than the others is a wait that never matched.
    step(name) { stepName = name; console.log(`step: ${name} (at ${((Date.now() - began) / 1000).toFixed(1)} s)`); },
    // Transitions finished, so a phone-width shot does not catch the sidebar mid-slide.
    shot: (name) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true, animations: "disabled" }),
    // The page at desktop width and again at phone width.
    async shotBoth(name) {
      await s.shot(name);
      const size = page.viewportSize();
      await page.setViewportSize({ width: 390, height: 800 });
      await s.shot(`phone-${name}`);
      await page.setViewportSize(size);
    },
    toast: (text) => page.locator("#toasts .toast", { hasText: text }),
    async finish(body) {
      try {
        await body();
        if (problems.length) throw new Error(problems.join("; "));
        console.log("ok");
      } catch (e) {
        console.error(`failed at "${stepName}": ${e.stack || e.message}`);
        await s.shot("failure").catch(() => {});
        await browser.close();
        process.exit(1);
      }
      await browser.close();
      process.exit(0);
    },
  };
  return s;
}
