// The console page in a real browser: run by TestConsoleInBrowser
// (internal/ui/browser_test.go), which starts the controller with an IPMI
// node on ipmi_sim and plays the machine's side of the serial port. The
// script asks it over stdout/stdin: "PRINT <json string>" makes the
// machine print, "INPUT <json string>" waits until the machine received
// those keys; the test answers "ok" or "error ...". Any page error,
// console error (a CSP violation is one), request to another origin,
// token in a URL or BMC password in anything the browser receives fails
// the run.
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';
import { Run, assert, env } from './harness.mjs';

const BASE = env('BASE_URL');
const ADMIN = env('ADMIN_TOKEN');
const NODE_ID = env('NODE_ID');
const NODE_NAME = env('NODE_NAME');
const BMC_PASSWORD = env('BMC_PASSWORD');
const SHOTS = env('SCREENSHOTS');
const run = new Run(SHOTS);
const { problems, pages } = run;
const step = (name, fn) => run.step(name, fn);

const replies = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
async function machine(verb, text) {
  console.log(`${verb} ${JSON.stringify(text)}`);
  const { value } = await replies.next();
  if (value !== 'ok') throw new Error(`${verb} ${JSON.stringify(text)}: ${value}`);
}


function watch(page, who) {
  pages.push([who, page]);
  page.on('pageerror', (e) => problems.push(`${who}: page error in "${run.stepName}": ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`${who}: console error in "${run.stepName}": ${m.text()}`);
  });
  page.on('request', (r) => {
    const u = r.url();
    if (!u.startsWith(BASE + '/') && !u.startsWith(BASE.replace(/^http/, 'ws') + '/')) problems.push(`${who}: request outside the controller: ${u}`);
    if (u.includes(ADMIN)) problems.push(`${who}: the token is in a URL: ${u}`);
  });
  page.on('response', async (r) => {
    const body = await r.text().catch(() => '');
    if (body.includes(BMC_PASSWORD)) problems.push(`${who}: the BMC password is in ${r.url()}`);
  });
  page.on('websocket', (ws) => {
    if (ws.url().includes(ADMIN)) problems.push(`${who}: the token is in the WebSocket URL`);
    ws.on('framereceived', (f) => {
      const s = typeof f.payload === 'string' ? f.payload : f.payload.toString('latin1');
      if (s.includes(BMC_PASSWORD)) problems.push(`${who}: the BMC password came over the WebSocket`);
    });
  });
}

async function login(page, token) {
  await page.goto(BASE + '/ui/');
  await page.locator('#token').fill(token);
  await page.locator('#token').press('Enter');
  await page.locator('#who').waitFor();
}

const screen = (page) => page.locator('#term .xterm-rows').innerText();

const browser = await chromium.launch({
  executablePath: env('CHROMIUM'), headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
try {
  const laptop = { viewport: { width: 1366, height: 768 } };
  const first = await (await browser.newContext(laptop)).newPage();
  first.setDefaultTimeout(20000);
  watch(first, 'first');
  const second = await (await browser.newContext(laptop)).newPage();
  second.setDefaultTimeout(20000);
  watch(second, 'second');

  await step('the admin opens the console from the node page and has the keyboard', async () => {
    await login(first, ADMIN);
    await first.goto(`${BASE}/ui/#/nodes/${NODE_ID}`);
    await first.locator('#node-console').click();
    await first.waitForURL(`${BASE}/ui/console.html#${NODE_ID}`);
    await first.waitForFunction(() => document.body.dataset.writer === 'true');
    assert((await first.locator('#console-title').textContent()) === `Console of ${NODE_NAME}`, 'title names the node');
    assert(/keyboard/.test(await first.locator('#console-status').textContent()), 'status says it has the keyboard');
  });

  await step('a second session watches, read-only', async () => {
    await login(second, ADMIN);
    await second.goto(`${BASE}/ui/console.html#${NODE_ID}`);
    await second.waitForFunction(() => document.body.dataset.writer === 'false');
    assert(/Watching \(read-only\)/.test(await second.locator('#console-status').textContent()), 'status says it watches');
  });

  await step('what the machine prints shows in both pages', async () => {
    await machine('PRINT', `\r\nDebian GNU/Linux 13 ${NODE_NAME} ttyS0\r\n\r\n${NODE_NAME} login: `);
    for (const page of [first, second]) {
      await page.waitForFunction((n) => (document.querySelector('#term .xterm-rows')?.innerText || '').includes(`${n} login:`), NODE_NAME);
    }
    await first.screenshot({ path: join(SHOTS, 'console-writer.png') });
  });

  await step('the watcher types and nothing reaches the machine; the writer types and it does', async () => {
    await second.locator('#term').click();
    await second.keyboard.type('intruder');
    await second.keyboard.press('Enter');
    await first.locator('#term').click();
    await first.keyboard.type('root');
    await first.keyboard.press('Enter');
    await machine('INPUT', 'root\r');
    await machine('PRINT', 'Password: ');
    await first.waitForFunction(() => (document.querySelector('#term .xterm-rows')?.innerText || '').includes('Password:'));
    await second.screenshot({ path: join(SHOTS, 'console-watcher.png') });
  });

  await step('closing the writer\u2019s page ends its session', async () => {
    await first.close();
    pages.splice(pages.findIndex(([w]) => w === 'first'), 1);
    assert(!(await screen(second)).includes('intruder'), 'the watcher sees no echo of its keys');
  });
} catch (e) {
  await run.failed(e);
} finally {
  await browser.close();
}
run.exit();
