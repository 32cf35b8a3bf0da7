// Two people on an authenticated instance: the owner signs in, invites a
// viewer from the Members page; the viewer joins through the link in a
// browser of their own, sees the company read-only and is refused a change
// with the reason, while the owner's change goes through.
// Usage: node teams.mjs <base-url> <screenshot-dir>
// The owner (ada@example.com) and the company were made by the Rust test.
import { start } from "./lib.mjs";

const s = await start();
const { page, base, browser } = s;
const PASSWORD = "correct horse battery";

await s.finish(async () => {
  s.step("someone not signed in is sent to the sign-in page");
  await page.goto(base + "/");
  await page.waitForURL(/\/login/);
  await s.shotBoth("sign-in");

  s.step("a wrong password is refused with the reason");
  await page.fill("#sign-in input[name=email]", "ada@example.com");
  await page.fill("#sign-in input[name=password]", "not the password");
  await page.click("#sign-in button[type=submit]");
  await s.toast("Invalid email or password").waitFor();

  s.step("the owner signs in and lands on the company");
  await page.fill("#sign-in input[name=password]", PASSWORD);
  await Promise.all([page.waitForURL(/\/dashboard$/), page.click("#sign-in button[type=submit]")]);
  await page.locator("#who-name", { hasText: "Ada Admin" }).waitFor();
  await page.locator("#who-role", { hasText: "owner" }).waitFor();
  if (await page.locator("#read-only").count()) throw new Error("the owner is shown the viewer notice");
  const prefix = new URL(page.url()).pathname.split("/")[1];

  s.step("the owner invites a viewer from the Members page");
  await page.goto(`${base}/${prefix}/company/members`);
  await page.selectOption("#invite-form select[name=humanRole]", "viewer");
  await page.click("#invite-form button[type=submit]");
  const link = page.locator("#invite-url");
  await link.filter({ hasText: "/invite/pcp_invite_" }).waitFor();
  const url = (await link.innerText()).trim();
  await page.locator("#open-invites li", { hasText: "viewer" }).waitFor();
  await s.shotBoth("members");

  s.step("the owner adds a secret; its value is never shown again");
  await page.goto(`${base}/${prefix}/company/secrets`);
  await page.fill("#secret-form input[name=name]", "Deploy key");
  await page.fill("#secret-form input[name=value]", "sk-browser-secret-0123456789");
  await page.click("#secret-form button[type=submit]");
  await page.locator("#secrets tr", { hasText: "Deploy key" }).waitFor();
  await page.reload();
  if ((await page.content()).includes("sk-browser-secret-0123456789")) throw new Error("the secret's value is on the page");
  await s.shotBoth("secrets");

  s.step("the viewer opens the link in their own browser and signs up");
  const other = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const viewer = await other.newPage();
  viewer.on("dialog", (d) => d.accept());
  await viewer.goto(url.replace(/^https?:\/\/[^/]+/, base));
  await viewer.locator("#invite-title", { hasText: "as viewer" }).waitFor();
  await viewer.fill("#invite-sign-up input[name=name]", "Vic Viewer");
  await viewer.fill("#invite-sign-up input[name=email]", "vic@example.com");
  await viewer.fill("#invite-sign-up input[name=password]", PASSWORD);
  await Promise.all([viewer.waitForURL(/\/dashboard$/), viewer.click("#invite-sign-up button[type=submit]")]);
  await viewer.locator("#who-role", { hasText: "viewer" }).waitFor();
  await viewer.locator("#read-only").waitFor();
  await viewer.screenshot({ path: `${s.shots}/viewer-dashboard.png`, fullPage: true });

  s.step("the viewer sees the secret's name but cannot add or rotate");
  await viewer.goto(`${base}/${prefix}/company/secrets`);
  await viewer.locator("#secrets tr", { hasText: "Deploy key" }).waitFor();
  if (await viewer.locator("#secret-form, [data-secret-rotate]").count()) throw new Error("a viewer is offered secret changes");
  await viewer.goto(`${base}/${prefix}/dashboard`);

  s.step("the viewer's new task is refused with the reason");
  await viewer.click("button[data-open-dialog=new-task]");
  await viewer.fill("#new-task input[name=title]", "Viewer should not create this");
  await viewer.click("#new-task button[type=submit]");
  await viewer.locator("#toasts .toast", { hasText: "Viewer access is read-only" }).waitFor();

  s.step("the owner's new task goes through");
  await page.goto(`${base}/${prefix}/dashboard`);
  await page.click("button[data-open-dialog=new-task]");
  await page.fill("#new-task input[name=title]", "Owner creates this");
  await page.click("#new-task button[type=submit]");
  await page.locator("#new-task").waitFor({ state: "hidden" });
  await page.goto(`${base}/${prefix}/tasks`);
  await page.getByText("Owner creates this").first().waitFor();
  if (await page.getByText("Viewer should not create this").count()) throw new Error("the viewer's task was created");

  s.step("the owner sees the viewer among the members");
  await page.goto(`${base}/${prefix}/company/members`);
  await page.locator("#members tr", { hasText: "vic@example.com" }).waitFor();

  s.step("the owner makes a board API key for the CLI on the account page; it is shown once");
  await page.click("#who-name");
  await page.waitForURL(/\/account$/);
  await page.fill("#board-key-form input[name=name]", "laptop cli");
  await page.click("#board-key-form button[type=submit]");
  await page.locator("#board-key-value", { hasText: "pcp_board_" }).waitFor();
  const boardKey = (await page.locator("#board-key-value").innerText()).trim();
  await page.locator("#board-keys tr", { hasText: "laptop cli" }).waitFor();
  await page.reload();
  if ((await page.content()).includes(boardKey)) throw new Error("the key's token is shown again");
  const me = await (await fetch(`${base}/api/cli-auth/me`, { headers: { authorization: `Bearer ${boardKey}` } })).json();
  if (me.source !== "board_key" || !me.user || me.user.name !== "Ada Admin") throw new Error(`the key is not Ada's: ${JSON.stringify(me)}`);
  await s.shotBoth("account");

  s.step("the viewer signs out and is back at sign-in");
  await viewer.keyboard.press("Escape");
  await viewer.locator("#new-task").waitFor({ state: "hidden" });
  await Promise.all([viewer.waitForURL(/\/login/), viewer.click("[data-sign-out]")]);
  await viewer.goto(`${base}/${prefix}/dashboard`);
  await viewer.waitForURL(/\/login/);
  await other.close();
});
