// The dashboard in a real browser: run by TestDashboardInBrowser
// (internal/ui/browser_test.go), which starts the controller and the
// simulated BMCs and passes their addresses in the environment. Any
// failed step, page error, console error (a CSP violation is one) or
// request to another origin fails the run.
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { Run, assert, env } from './harness.mjs';

const BASE = env('BASE_URL');
const ADMIN = env('ADMIN_TOKEN');
const MEMBER = env('MEMBER_TOKEN');
const SIM = env('SIM_URL');
const FAULT_SYSTEM = env('FAULT_SYSTEM');
const NODES = Number(env('NODES'));
const AGENT_TOKEN = env('AGENT_TOKEN'); // the agent erasing rack1-u-3's disks
const SHOTS = env('SCREENSHOTS');
const run = new Run(SHOTS);
const { problems, pages } = run;
const step = (name, fn) => run.step(name, fn);


// heartbeat reports the erase's progress as rack1-u-3's agent does.
async function heartbeat(progress) {
  const res = await fetch(`${BASE}/v1/agent/heartbeat`, {
    method: 'POST', headers: { Authorization: 'Bearer ' + AGENT_TOKEN, 'Content-Type': 'application/json' },
    body: JSON.stringify({ agent_version: 'browser-test', boot_id: 'b1', command: { id: 'erase-1', state: 'running', progress } }),
  });
  assert(res.ok, `heartbeat: HTTP ${res.status}`);
}

// apiGet reads the API as the admin, to compare the page with it.
async function apiGet(path) {
  const res = await fetch(BASE + path, { headers: { Authorization: 'Bearer ' + ADMIN } });
  assert(res.ok, `GET ${path}: HTTP ${res.status}`);
  return res.json();
}

async function simFault(fault) {
  const res = await fetch(`${SIM}/sim/systems/${FAULT_SYSTEM}/fault`, { method: 'POST', body: JSON.stringify({ fault }) });
  assert(res.ok, `sim fault ${fault}: HTTP ${res.status}`);
}

// watch records what a page must never do.
function watch(page, who) {
  pages.push([who, page]);
  page.on('pageerror', (e) => problems.push(`${who}: page error in "${run.stepName}": ${e.message}`));
  page.on('console', (m) => {
    // A refusal the page shows (401, 403; 422 for an inspection this
    // controller cannot do; 404 for the node just retired) is logged by
    // the browser as a failed load.
    const shown = /status of (401|403|422)/.test(m.text()) || (/status of 404/.test(m.text()) && run.stepName.startsWith('retire'));
    if (m.type() === 'error' && !shown) {
      problems.push(`${who}: console error in "${run.stepName}": ${m.text()}`);
    }
  });
  page.on('request', (r) => {
    if (!r.url().startsWith(BASE + '/')) problems.push(`${who}: request outside the controller: ${r.url()}`);
  });
}

const tile = (page, name) => page.locator(`#grid a.tile[data-name="${name}"]`);

async function login(page, token) {
  await page.goto(BASE + '/ui/');
  await page.locator('#token').fill(token);
  await page.locator('#token').press('Enter');
  await page.locator('#grid a.tile').first().waitFor();
}

// confirm answers the confirmation dialog with the keyboard: Cancel has
// the focus, Tab moves to the action, Enter presses it.
async function confirm(page, expectTitle) {
  const dlg = page.locator('dialog#confirm');
  await dlg.waitFor({ state: 'visible' });
  assert((await page.locator('#confirm-title').textContent()) === expectTitle, `dialog title ${expectTitle}`);
  assert(await page.evaluate(() => document.activeElement.id === 'confirm-cancel'), 'Cancel is focused first');
  await page.keyboard.press('Tab');
  await page.keyboard.press('Enter');
  await dlg.waitFor({ state: 'hidden' });
}

const browser = await chromium.launch({
  executablePath: env('CHROMIUM'), headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
try {
  const laptop = { viewport: { width: 1366, height: 768 } };
  const admin = await (await browser.newContext(laptop)).newPage();
  admin.setDefaultTimeout(15000);
  watch(admin, 'admin');

  await step('the dashboard is served with a strict CSP', async () => {
    const res = await admin.goto(BASE + '/'); // the controller's root leads to the dashboard
    assert(new URL(admin.url()).pathname === '/ui/', 'GET / redirects to /ui/, got ' + admin.url());
    const csp = res.headers()['content-security-policy'] || '';
    assert(csp.includes("default-src 'none'") && csp.includes("script-src 'self'") && !csp.includes('unsafe'), 'CSP: ' + csp);
  });

  await step('a wrong token is refused', async () => {
    await admin.locator('#token').fill('bmt_not-a-token');
    await admin.locator('#token').press('Enter');
    await admin.waitForFunction(() => /not accepted/.test(document.querySelector('#login-error')?.textContent || ''));
  });

  await step('admin logs in and sees the fleet', async () => {
    await login(admin, ADMIN);
    await admin.waitForFunction((n) => document.querySelectorAll('#grid a.tile').length === n, NODES);
    await admin.waitForFunction(() => document.querySelectorAll('#grid a.tile.state-active').length === 1);
    assert(await admin.locator('#who').textContent() === 'signed in as admin', 'role shown');
    assert(await admin.evaluate(() => !!sessionStorage.getItem('baremetal.token')), 'token in sessionStorage');
    assert(await admin.locator('nav a[href="#/jobs"]').isVisible(), 'admin sees Jobs');
  });

  await step('every provision state of the API is counted, coloured and a filter', async () => {
    // The API's own list (its document), not one written here: a state
    // the API gains must show without a change to this script either.
    const doc = await apiGet('/openapi.json');
    const states = doc.components.schemas.Node.properties.provision_state.enum;
    const powers = doc.components.schemas.Node.properties.power_state.enum;
    assert(states.includes('inspecting'), 'the document lists inspecting: ' + states);
    const { items } = await apiGet('/v1/nodes?limit=1000&include_deleting=true');
    const want = Object.fromEntries(states.map((st) => [st, items.filter((n) => n.provision_state === st).length]));
    assert(want.inspecting === 1 && want.cleaning === 1, 'the fixtures: ' + JSON.stringify(want));
    await admin.waitForFunction((want) => Object.entries(want).every(([st, c]) =>
      document.querySelector(`button.count[data-kind="state"][data-value="${st}"] .n`)?.textContent === String(c)), want);
    const shown = await admin.$$eval('button.count[data-kind="state"]', (bs) => bs.map((b) => b.dataset.value));
    assert(JSON.stringify(shown) === JSON.stringify(states), `counts ${shown}, want the API's ${states}`);
    // A colour of its own for each: on the legend, the counts and the tiles.
    const colours = await admin.$$eval('.legend li', (lis) => lis.map((li) => [li.textContent.trim(), getComputedStyle(li.querySelector('.swatch')).backgroundColor]));
    const labels = colours.map(([label]) => label);
    assert(states.every((st) => labels.includes(st)), `legend ${labels}, want every state`);
    const solid = colours.filter(([label]) => label !== 'maintenance'); // striped, on purpose
    const distinct = new Set(solid.map(([, c]) => c));
    assert(distinct.size === solid.length, 'two looks share a colour: ' + JSON.stringify(colours));
    // In one evaluation: the counts are redrawn on every refresh, and a
    // button replaced meanwhile has no style.
    const wrong = await admin.evaluate(([states, colours]) => {
      const out = [];
      for (const st of states) {
        const colour = colours.find(([label]) => label === st)[1];
        const edge = getComputedStyle(document.querySelector(`button.count[data-kind="state"][data-value="${st}"]`)).borderLeftColor;
        if (edge !== colour) out.push(`the ${st} count is ${edge}, its legend ${colour}`);
        // Tiles wear it too, but those faulted or in maintenance, which wear that.
        for (const a of document.querySelectorAll(`#grid a.tile[data-state="${st}"][data-fault=""][data-maintenance="false"]`)) {
          if (getComputedStyle(a).backgroundColor !== colour) out.push(`tile ${a.dataset.name} (${st}) is ${getComputedStyle(a).backgroundColor}, its legend ${colour}`);
        }
      }
      return out;
    }, [states, colours]);
    assert(wrong.length === 0, wrong.join('; '));
    for (const p of powers) assert(await admin.locator(`button.count[data-kind="power"][data-value="${p}"]`).count() === 1, 'a count of power ' + p);
    // Each state's count is a filter (and a second click shows all).
    for (const st of states) {
      await admin.locator(`button.count[data-kind="state"][data-value="${st}"]`).click();
      const visible = await admin.$$eval('#grid li:not([hidden]) a.tile', (as) => as.map((a) => a.dataset.state));
      assert(visible.length === want[st] && visible.every((v) => v === st), `filter ${st}: ${visible}`);
      await admin.locator(`button.count[data-kind="state"][data-value="${st}"]`).click();
    }
    await admin.waitForFunction((n) => document.querySelectorAll('#grid li:not([hidden])').length === n, NODES);
  });

  await step('tiles show resource class, instance and the agent\'s progress, live', async () => {
    const web = tile(admin, 'rack1-u-5');
    await admin.waitForFunction(() => document.querySelector('#grid a.tile[data-name="rack1-u-5"]')?.dataset.instance === 'web-1');
    assert((await web.innerText()).includes('baremetal · web-1'), 'class and instance on the tile: ' + await web.innerText());
    assert(await tile(admin, 'rack1-u-0').getAttribute('data-class') === 'baremetal', 'the class of a tile without an instance');
    const erasing = tile(admin, 'rack1-u-3');
    assert((await erasing.innerText()).includes('cleaning · erase 42%'), 'agent progress on the tile: ' + await erasing.innerText());
    assert(await erasing.locator('progress').evaluate((p) => p.value) === 42, 'a progress bar at 42');
    assert((await tile(admin, 'rack1-u-4').innerText()).includes('inspecting · agent reporting'), 'the inspecting tile: ' + await tile(admin, 'rack1-u-4').innerText());
    // The step of the node's flow, and its place among the flow's.
    assert((await erasing.innerText()).includes('cleaning · erase 42% · erase 2/4'), 'the flow\'s step on the tile: ' + await erasing.innerText());
    assert(await tile(admin, 'rack1-u-4').getAttribute('data-step') === 'wait_inventory 2/4', 'the inspecting tile\'s step');
    assert(await tile(admin, 'rack1-u-0').getAttribute('data-step') === '', 'a node in no flow has no step');
    await heartbeat(77);
    await admin.waitForFunction(() => document.querySelector('#grid a.tile[data-name="rack1-u-3"]')?.dataset.agent === 'erase 77%');
    assert(await erasing.locator('progress').evaluate((p) => p.value) === 77, 'the bar follows');
    await erasing.click();
    await admin.waitForFunction(() => /^clean: erase 77%/.test(document.querySelector('#f-agent')?.textContent || ''));
    assert(await admin.locator('#f-agent progress').count() === 1, 'a progress bar on the node page');
    assert(/^cleanup: step erase 2\/4 since \d+ min ago/.test(await admin.locator('#f-flow').textContent()), 'the flow on the node page: ' + await admin.locator('#f-flow').textContent());
    assert(JSON.stringify(await admin.$$eval('#f-flow ol.steps li', (lis) => lis.map((li) => [li.textContent, li.className, li.getAttribute('aria-current')]))) ===
      JSON.stringify([['boot_agent', 'done', null], ['erase', 'current', 'step'], ['power_off', '', null], ['clear_boot', '', null]]), 'the flow\'s steps, the current one marked');
    await admin.screenshot({ path: join(SHOTS, 'node-agent.png') });
    assert(await admin.locator('#inspect').isDisabled(), 'a cleaning node cannot be inspected');
    assert(/cleaning/.test(await admin.locator('#inspect-why').textContent()), 'and the page says why');
  });

  await step('a node\'s inventory, and an inspection refused with the API\'s reason', async () => {
    await admin.goto(BASE + '/ui/#/');
    await tile(admin, 'rack1-u-6').click();
    await admin.locator('#inv-system').waitFor();
    const sys = await admin.locator('#inv-system').innerText();
    assert(sys.includes('Dell Inc. PowerEdge R650') && sys.includes('SVC7Q2') && sys.includes('256 GiB') && sys.includes('uefi'), 'the machine: ' + sys);
    assert((await admin.locator('#inv-disks tr[data-disk="nvme0n1"]').innerText()).includes('960 GiB'), 'the disk');
    assert((await admin.locator('#inv-nics tr[data-nic="eno1"]').innerText()).includes('25000 Mb/s'), 'the NIC');
    assert((await admin.locator('#inv-nics tr[data-nic="eno1"]').innerText()).includes('leaf-1 Ethernet7 VLAN 100'), 'the NIC\'s switch port');
    // Placement: the operator's traits apart from those the controller
    // derived (here from the BMC at verify), and who may use the node.
    assert((await admin.locator('#f-derived-traits').textContent()).includes('HW_ARCH_X86_64'), 'derived traits: ' + await admin.locator('#f-derived-traits').textContent());
    assert(await admin.locator('#f-owner').textContent() === 'any project', 'the owner: ' + await admin.locator('#f-owner').textContent());
    assert(/^(unknown|ok)/.test(await admin.locator('#f-health').textContent()), 'the health: ' + await admin.locator('#f-health').textContent());
    await admin.screenshot({ path: join(SHOTS, 'node-inventory.png') });
    // This controller serves no deploy agent: the API refuses (422), and
    // its problem document says why, on the page.
    assert(!(await admin.locator('#inspect').isDisabled()), 'an available node may be inspected');
    await admin.locator('#inspect').click();
    await confirm(admin, 'Inspect');
    await admin.waitForFunction(() => /^Failed \(422 invalid_state\): inspection boots the deploy agent, and this controller serves no agent image/.test(document.querySelector('#status').textContent));
    assert(await admin.locator('#f-state').textContent() === 'available', 'the refused inspection changed nothing');
    await admin.goto(BASE + '/ui/#/');
  });

  await step('a node turns faulted when its BMC goes down', async () => {
    await simFault('down');
    await tile(admin, 'rack1-u-0').and(admin.locator('.faulted')).waitFor({ timeout: 30000 });
    assert(await tile(admin, 'rack1-u-0').getAttribute('data-fault') === 'bmc_unreachable', 'fault is bmc_unreachable');
    await admin.waitForFunction(() => document.querySelector('button.count[data-kind="fault"][data-value="*"] .n')?.textContent === '1');
  });

  await step('maintenance with a reason, from the keyboard, and its event', async () => {
    const t = tile(admin, 'rack1-u-1');
    await t.focus();
    await admin.keyboard.press('Enter');
    await admin.locator('#maint-reason').waitFor();
    await admin.waitForFunction(() => document.querySelector('h1')?.textContent === 'rack1-u-1');
    // Escape cancels: nothing changes.
    await admin.locator('#maint-reason').fill('replacing DIMM B2');
    await admin.locator('#maint-reason').press('Enter');
    await admin.locator('dialog#confirm').waitFor({ state: 'visible' });
    await admin.keyboard.press('Escape');
    await admin.locator('dialog#confirm').waitFor({ state: 'hidden' });
    await admin.waitForTimeout(300);
    assert(await admin.locator('#f-maintenance').textContent() === 'no', 'cancelled maintenance changed nothing');
    await admin.locator('#maint-reason').press('Enter');
    await confirm(admin, 'Set maintenance');
    await admin.waitForFunction(() => document.querySelector('#f-maintenance')?.textContent === 'yes: replacing DIMM B2');
    await admin.locator('#events tr[data-type="maintenance"]', { hasText: 'replacing DIMM B2' }).waitFor();
    const who = await admin.locator('#events tr[data-type="maintenance"] td:nth-child(2)').first().textContent();
    assert(who.includes('via the dashboard (baremetal-dashboard)'), `the event names who, and that it was the dashboard: ${who}`);
    await admin.screenshot({ path: join(SHOTS, 'node-maintenance.png') });
  });

  await step('power off and on, each confirmed', async () => {
    await admin.goto(BASE + '/ui/#/');
    await tile(admin, 'rack1-u-2').click();
    await admin.locator('#power-off').click();
    await confirm(admin, 'Power off (hard)');
    await admin.waitForFunction(() => /Power off queued/.test(document.querySelector('#status').textContent));
    await admin.waitForFunction(() => document.querySelector('#f-power')?.textContent === 'off', null, { timeout: 20000 });
    await admin.locator('#power-on').click();
    await confirm(admin, 'Power on');
    await admin.waitForFunction(() => document.querySelector('#f-power')?.textContent === 'on', null, { timeout: 20000 });
  });

  await step('the overview shows fault, maintenance and the active node', async () => {
    await admin.locator('nav a[href="#/"]').click();
    await tile(admin, 'rack1-u-1').and(admin.locator('.maintenance')).waitFor();
    assert(await tile(admin, 'rack1-u-0').getAttribute('data-fault') === 'bmc_unreachable', 'still faulted');
    await admin.mouse.move(0, 0);
    await admin.evaluate(() => document.getElementById('status').replaceChildren());
    // Cut below the grid: this one is the README's picture.
    const box = await admin.locator('#grid').boundingBox();
    await admin.screenshot({ path: join(SHOTS, 'overview.png'), clip: { x: 0, y: 0, width: 1366, height: Math.ceil(box.y + box.height + 16) } });
  });

  await step('the node heals when its BMC returns', async () => {
    await simFault('none');
    await admin.locator('#grid a.tile[data-name="rack1-u-0"][data-fault=""]').waitFor({ timeout: 30000 });
    assert(await tile(admin, 'rack1-u-0').getAttribute('data-state') === 'available', 'healed to available');
    await tile(admin, 'rack1-u-0').click();
    await admin.waitForFunction(() => document.querySelector('#f-fault')?.textContent === 'none');
    // The timeline has the fault and its clearing.
    await admin.locator('#events tr[data-type="fault"]', { hasText: '∅ → bmc_unreachable' }).waitFor();
    await admin.locator('#events tr[data-type="fault"]', { hasText: 'bmc_unreachable → ∅' }).waitFor();
  });

  await step('clear maintenance, and its event', async () => {
    await admin.goto(BASE + '/ui/#/');
    await tile(admin, 'rack1-u-1').click();
    await admin.locator('#maint-off').click();
    await confirm(admin, 'Clear maintenance');
    await admin.waitForFunction(() => document.querySelector('#f-maintenance')?.textContent === 'no');
    await admin.locator('#events tr[data-type="maintenance"]', { hasText: 'true → false' }).waitFor();
    assert(await admin.locator('#maint-reason').isVisible(), 'the set form is back');
  });

  await step('retire a node, confirmed: it is powered off and goes', async () => {
    await admin.goto(BASE + '/ui/#/');
    await tile(admin, 'rack1-u-7').click();
    await admin.locator('#retire').click();
    await confirm(admin, 'Retire node');
    await admin.waitForFunction(() => /^Retire of rack1-u-7 queued \(job \d+\): node is deleting/.test(document.querySelector('#status').textContent));
    await admin.locator('#node-gone').waitFor({ timeout: 30000 });
    assert(await admin.locator('#actions').isHidden(), 'no actions on a node that is gone');
    await admin.goto(BASE + '/ui/#/');
    await admin.waitForFunction((n) => document.querySelectorAll('#grid a.tile').length === n, NODES - 1);
  });

  await step('jobs and instances pages', async () => {
    await admin.locator('nav a[href="#/jobs"]').click();
    await admin.locator('#job-state').selectOption('all');
    await admin.locator('#jobs tr[data-kind="power"]').first().waitFor();
    // The job states are the API's; attempts say what the bound is.
    const doc = await apiGet('/openapi.json');
    const options = await admin.$$eval('#job-state option', (os) => os.map((o) => o.value));
    assert(doc.components.schemas.Job.properties.state.enum.every((st) => options.includes(st)), 'every job state is a choice: ' + options);
    const attempts = await admin.$$eval('#jobs tbody tr', (trs) => trs.map((tr) => [tr.dataset.kind, tr.children[4].textContent]));
    assert(attempts.length > 0 && attempts.every(([, a]) => !a.includes('32767')), 'an attempt of 32767: ' + JSON.stringify(attempts));
    // A kind that retries until it succeeds (the retire of the step
    // before, or a verify when it is still on the page: power syncs push
    // older jobs off it on a slow machine) shows its attempt alone.
    const unbounded = ['verify', 'retire', 'cleanup', 'inspect'];
    assert(attempts.some(([k, a]) => unbounded.includes(k) && a === '1'), 'a finished job that retries until it succeeds shows its attempt alone: ' + JSON.stringify(attempts));
    assert(attempts.some(([k, a]) => k === 'power' && a === '1 / 6'), 'a power job shows its bound: ' + JSON.stringify(attempts));
    await admin.goto(BASE + '/ui/#/instances?project=team-a');
    await admin.locator('#instances tr[data-name="web-1"]').waitFor();
  });

  await step('a member sees no BMC address, no credentials, no admin action', async () => {
    const page = await (await browser.newContext(laptop)).newPage();
    page.setDefaultTimeout(15000);
    watch(page, 'member');
    const bodies = [];
    page.on('response', async (r) => {
      if (new URL(r.url()).pathname.startsWith('/v1/')) bodies.push(await r.text().catch(() => ''));
    });
    await login(page, MEMBER);
    await page.waitForFunction((n) => document.querySelectorAll('#grid a.tile').length === n, NODES - 1);
    assert(await page.locator('#who').textContent() === 'signed in as member', 'role shown');
    // A member follows the agent too, and sees its own instance by name.
    await page.waitForFunction(() => document.querySelector('#grid a.tile[data-name="rack1-u-3"]')?.dataset.agent === 'erase 77%');
    await page.waitForFunction(() => document.querySelector('#grid a.tile[data-name="rack1-u-5"]')?.dataset.instance === 'web-1');
    assert(!(await page.locator('nav a[href="#/jobs"]').isVisible()), 'no Jobs for a member');
    await page.goto(BASE + '/ui/#/jobs'); // by hand: a page, not a stream of 403s
    await page.waitForFunction(() => document.querySelector('h1')?.textContent === 'Not for this token');
    await page.goto(BASE + '/ui/#/');
    await tile(page, 'rack1-u-1').click();
    await page.waitForFunction(() => document.querySelector('#f-state')?.textContent === 'available');
    for (const sel of ['#actions', '#node-bmc', '#events', '#node-jobs', '#f-last-error', '#power-off', '#maint-reason', '#inspect', '#retire', '#node-inventory']) {
      assert(await page.locator(sel).count() === 0, `member page has no ${sel}`);
    }
    await page.goto(BASE + '/ui/#/instances');
    await page.locator('#instances tr[data-name="web-1"]').waitFor();
    await page.screenshot({ path: join(SHOTS, 'member-instances.png') });
    const host = new URL(SIM).host;
    const text = await page.evaluate(() => document.body.innerText);
    assert(!text.includes(host), 'the page shows no BMC address');
    assert(bodies.length > 0, 'responses were seen');
    for (const b of bodies) {
      assert(!b.includes(host) && !b.includes('password') && !b.includes('"username"'), 'a response to the member holds BMC details: ' + b.slice(0, 200));
    }
  });

  await step('log out forgets the token', async () => {
    await admin.locator('#logout').click();
    await admin.locator('#token').waitFor();
    assert(await admin.evaluate(() => sessionStorage.getItem('baremetal.token') === null), 'token removed');
  });
} catch (e) {
  await run.failed(e);
} finally {
  await browser.close();
}
run.exit();
