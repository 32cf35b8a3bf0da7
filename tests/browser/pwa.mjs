// The board as an installable app: its manifest and icons load, the service
// worker registers at the root scope and controls the page, the account
// page's Notifications section explains itself and saves what to be told
// about, and with the network gone a page opens the offline shell.
import { start } from "./lib.mjs";

const s = await start();
const { page, base, context } = s;
const get = async (path) => {
  const res = await page.request.get(base + path);
  if (!res.ok()) throw new Error(`GET ${path}: ${res.status()} ${await res.text()}`);
  return res;
};

await s.finish(async () => {
  s.step("the manifest names the app and its icons load");
  const manifest = await (await get("/manifest.webmanifest")).json();
  if (manifest.short_name !== "Paperclip" || manifest.display !== "standalone" || manifest.start_url !== "/")
    throw new Error(`manifest: ${JSON.stringify(manifest)}`);
  const sizes = manifest.icons.map((i) => `${i.sizes}/${i.purpose || ""}`);
  for (const want of ["192x192/any", "512x512/any", "512x512/maskable"])
    if (!sizes.includes(want)) throw new Error(`no ${want} icon: ${sizes}`);
  for (const icon of manifest.icons) {
    const res = await get(icon.src);
    if (res.headers()["content-type"] !== icon.type) throw new Error(`${icon.src} is ${res.headers()["content-type"]}`);
  }

  s.step("a page links the manifest and the worker takes control");
  const company = await (await page.request.post(base + "/api/companies", { data: { name: "Pocket Works" } })).json();
  await page.goto(`${base}/${company.issuePrefix}/account`);
  const href = await page.locator("link[rel=manifest]").getAttribute("href");
  if (href !== "/manifest.webmanifest") throw new Error(`manifest link ${href}`);
  const scope = await page.evaluate(async () => (await navigator.serviceWorker.ready).scope);
  if (scope !== base + "/") throw new Error(`worker scope ${scope}`);
  await page.waitForFunction(() => navigator.serviceWorker.controller !== null);

  s.step("the Notifications section says where this device stands");
  const section = page.locator("#push-settings");
  await section.locator("#push-status", { hasText: "does not get notifications yet" }).waitFor();
  await section.locator("#push-enable").waitFor();
  await section.locator("input[name=failedRuns]").uncheck();
  await s.toast("Saved").first().waitFor();
  const prefs = await (await get("/api/push/preferences")).json();
  if (prefs.failedRuns !== false || prefs.approvals !== true) throw new Error(`preferences ${JSON.stringify(prefs)}`);
  await section.scrollIntoViewIfNeeded();
  await s.shotBoth("account-notifications");

  s.step("offline, a page opens the offline shell");
  await context.setOffline(true);
  await page.goto(`${base}/${company.issuePrefix}/dashboard`);
  await page.locator("#offline h1", { hasText: "You are offline" }).waitFor();
  await s.shotBoth("offline");
  await context.setOffline(false);
});
