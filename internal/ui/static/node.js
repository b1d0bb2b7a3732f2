// Node detail: fields, power, fault, what its deploy agent is doing, the
// hardware inventory, the event timeline (who did what and why), the
// node's jobs, and the operator's actions, each confirmed and each a call
// of the public API.
import { api, etag, listAll, path } from './api.js';
import { ago, dl, h, replace, table, timeEl } from './dom.js';
import { attemptText } from './jobs.js';
import { agentProgress, agentText, flowText, look } from './overview.js';
import { confirmAction, live, say } from './shell.js';

export function nodeDetail(root, { params, role }) {
  const id = params[0];
  const admin = role === 'admin';
  let node = null;
  let instance = null; // the node's instance, as far as this token may see it

  const title = h('h1', null, 'Node');
  const badge = h('span', { class: 'badge', id: 'node-badge' });
  const status = h('div', { id: 'node-status' });
  const hardware = h('div', { id: 'node-hardware' });
  const bmc = admin ? h('div', { id: 'node-bmc' }) : null;
  const inventory = admin ? h('div', { id: 'node-inventory' }) : null;
  const identity = h('div', { id: 'node-identity' });
  const events = admin ? h('div', { id: 'events' }) : null;
  const jobList = admin ? h('div', { id: 'node-jobs' }) : null;
  const actions = admin ? buildActions() : null;

  replace(root,
    h('p', { class: 'crumbs' }, h('a', { href: '#/' }, 'Overview'), ' › ', h('span', { id: 'crumb' }, id)),
    h('div', { class: 'titlebar' }, title, badge,
      // Another document (its CSP lets xterm.js style itself), in this
      // tab: the token is this tab's.
      admin && h('a', { href: 'console.html#' + encodeURIComponent(id), id: 'node-console', class: 'button' }, 'Console')),
    h('div', { class: 'columns' },
      h('div', null,
        h('section', { 'aria-labelledby': 's-status' }, h('h2', { id: 's-status' }, 'Status'), status),
        actions,
        h('section', { 'aria-labelledby': 's-hw' }, h('h2', { id: 's-hw' }, 'Hardware'), hardware),
        bmc && h('section', { 'aria-labelledby': 's-bmc' }, h('h2', { id: 's-bmc' }, 'BMC'), bmc),
        h('section', { 'aria-labelledby': 's-id' }, h('h2', { id: 's-id' }, 'Record'), identity)),
      admin && h('div', null,
        h('section', { 'aria-labelledby': 's-inv' }, h('h2', { id: 's-inv' }, 'Inventory (inspection)'), inventory),
        h('section', { 'aria-labelledby': 's-events' }, h('h2', { id: 's-events' }, 'Events (newest first)'), events),
        h('section', { 'aria-labelledby': 's-jobs' }, h('h2', { id: 's-jobs' }, 'Jobs'), jobList))));

  // Actions are built once and only shown or hidden on refresh, so a
  // reason being typed and the keyboard focus survive it.
  function buildActions() {
    const reason = h('input', { id: 'maint-reason', name: 'reason', required: true, maxlength: 500, size: 40, placeholder: 'e.g. replacing DIMM B2' });
    const setForm = h('form', { id: 'maint-set', class: 'inline' },
      h('label', { for: 'maint-reason' }, 'Reason'), reason,
      h('button', { type: 'submit', id: 'maint-on' }, 'Set maintenance…'));
    setForm.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const why = reason.value.trim();
      if (!why) { say('Maintenance needs a reason.', 'error'); reason.focus(); return; }
      if (!await confirmAction('Set maintenance', `Put ${node.name} in maintenance? The controller keeps observing it but acts on nothing until maintenance is cleared. Reason: “${why}”`, 'Set maintenance')) return;
      await act(`Maintenance set on ${node.name}`, () => api('PATCH', path.node(id), { maintenance: true, maintenance_reason: why }));
      reason.value = '';
    });
    const clear = h('button', { type: 'button', id: 'maint-off' }, 'Clear maintenance…');
    clear.addEventListener('click', async () => {
      if (!await confirmAction('Clear maintenance', `Take ${node.name} out of maintenance (reason was “${node.maintenance_reason}”)? Queued work for it resumes.`, 'Clear maintenance')) return;
      await act(`Maintenance cleared on ${node.name}`, () => api('PATCH', path.node(id), { maintenance: false }));
    });
    const clearBox = h('div', { id: 'maint-clear', class: 'inline' }, h('span', { id: 'maint-now' }), clear);
    const power = ['on', 'off', 'reset'].map((target) => {
      const b = h('button', { type: 'button', id: 'power-' + target }, `Power ${target}…`);
      b.addEventListener('click', async () => {
        const what = { on: 'Power on', off: 'Power off (hard)', reset: 'Reset (hard)' }[target];
        const notes = [node.instance_id ? 'It holds an instance.' : '',
          node.maintenance ? 'It is in maintenance: the power job waits until maintenance is cleared.' : ''].filter(Boolean).join(' ');
        if (!await confirmAction(what, `${what} ${node.name} through its BMC? ${notes}`, what)) return;
        await act(`Power ${target} queued for ${node.name}`, () => api('POST', path.power(id), { target }), true);
      });
      return b;
    });

    const inspect = h('button', { type: 'button', id: 'inspect' }, 'Inspect…');
    const inspectWhy = h('span', { id: 'inspect-why', class: 'muted' });
    inspect.addEventListener('click', async () => {
      if (!await confirmAction('Inspect', `Inspect ${node.name}? The controller boots the deploy agent on it through its BMC to read its hardware; the node is inspecting (not schedulable) until the agent has reported, then available again, powered off.`, 'Inspect')) return;
      await act(`Inspection queued for ${node.name}`, () => api('POST', path.inspect(id)), true);
    });

    const retire = h('button', { type: 'button', id: 'retire', class: 'danger' }, 'Retire…');
    const retireWhy = h('span', { id: 'retire-why', class: 'muted' });
    retire.addEventListener('click', async () => {
      const notes = [
        node.instance_id ? `Its instance ${instance ? instance.name : node.instance_id} is deleted with it.` : '',
        node.maintenance ? 'It is in maintenance: the retire waits until maintenance is cleared.' : '',
      ].filter(Boolean).join(' ');
      if (!await confirmAction('Retire node', `Retire ${node.name}? The controller powers it off through its BMC, then removes the node, its events and inventory. ${notes} This cannot be undone.`, 'Retire')) return;
      // If-Match: what was confirmed is this version of the node; one
      // that changed meanwhile (an instance placed on it) is refused.
      await act(`Retire of ${node.name} queued`, () => api('DELETE', path.node(id), undefined, { 'If-Match': etag(node.version) }), true);
    });

    const el = h('section', { 'aria-labelledby': 's-actions', id: 'actions' }, h('h2', { id: 's-actions' }, 'Actions'),
      h('h3', null, 'Maintenance'), setForm, clearBox,
      h('h3', null, 'Power'), h('div', { class: 'inline' }, power),
      h('h3', null, 'Inspection'), h('div', { class: 'inline' }, inspect, inspectWhy),
      h('h3', null, 'Retire'), h('div', { class: 'inline' }, retire, retireWhy));
    // Hidden until the node is loaded: the confirmations name it, and a
    // click before the first answer had nothing to confirm.
    el.hidden = true;
    el.update = (n) => {
      el.hidden = false;
      setForm.hidden = n.maintenance;
      clearBox.hidden = !n.maintenance;
      replace(clearBox.firstChild, n.maintenance ? `In maintenance: ${n.maintenance_reason}` : '');
      // The API decides; this only keeps a click from asking for what
      // the node's state already rules out.
      let why = '';
      if (n.provision_state !== 'available' || n.instance_id) why = `Only an available node without an instance can be inspected; this one is ${n.provision_state}.`;
      else if (n.maintenance) why = 'Clear maintenance to inspect.';
      inspect.disabled = !!why;
      replace(inspectWhy, why);
      retire.hidden = n.provision_state === 'deleting';
      replace(retireWhy, n.provision_state === 'deleting' ? 'Being retired: the retire job powers it off and removes the record.' : '');
    };
    el.gone = () => { el.hidden = true; };
    return el;
  }

  async function act(done, call, job) {
    try {
      const res = await call();
      say(done + (job && res && res.job_id ? ` (job ${res.job_id})` : '') + (res && res.message ? `: ${res.message}` : '') + '.', 'ok');
    } catch (e) {
      // The problem document's detail says what was wrong and what to do.
      say(`Failed${e.status ? ` (${e.status}${e.code ? ' ' + e.code : ''})` : ''}: ${e.message}`, 'error');
    }
    poll.soon();
  }

  // Events are read from the last page on: the list is oldest first with
  // an opaque cursor, so the dashboard keeps the cursor of the last page
  // and reads only from there on each refresh.
  let evItems = [], evCursor = '', evPages = [0], tokenNames = null, shownEvents = '';
  async function loadEvents() {
    if (!tokenNames) {
      tokenNames = {};
      try {
        for (const t of (await listAll('/v1/tokens')).items) tokenNames['token:' + t.id] = t.name;
      } catch { /* names are a nicety */ }
    }
    let cursor = evCursor;
    evItems = evItems.slice(0, evPages[evPages.length - 1]);
    for (let i = 0; i < 100; i++) {
      const q = new URLSearchParams({ limit: '1000' });
      if (cursor) q.set('cursor', cursor);
      const page = await api('GET', `${path.events(id)}?${q}`);
      evItems.push(...page.items);
      if (!page.next_cursor) break;
      evPages.push(evItems.length);
      cursor = evCursor = page.next_cursor;
    }
    const key = evItems.length + ':' + (evItems.length ? evItems[evItems.length - 1].id : '');
    if (key === shownEvents) return;
    shownEvents = key;
    const rows = evItems.slice().reverse().map((e) => ({
      attrs: { 'data-type': e.type },
      cells: [timeEl(e.time), who(e.actor), e.type,
        e.field ? `${e.field}: ${e.old || '∅'} → ${e.new || '∅'}` : '', e.message],
    }));
    replace(events, rows.length ? table(null, ['Time', 'Who', 'What', 'Change', 'Why / message'], rows, { class: 'events' }) : h('p', { class: 'muted' }, 'No events.'));
  }

  function who(actor) {
    const name = tokenNames && tokenNames[actor];
    return name ? h('span', { title: actor }, name) : actor;
  }

  let shownJobs = '';
  async function loadJobs() {
    const { items } = await api('GET', `/v1/jobs?node_id=${encodeURIComponent(id)}&limit=20`);
    const key = JSON.stringify(items);
    if (key === shownJobs) return;
    shownJobs = key;
    replace(jobList, items.length ? table(null, ['ID', 'Kind', 'State', 'Attempt', 'Last error', 'Created'],
      items.map((j) => ({ attrs: { 'data-kind': j.kind }, cells: [String(j.id), j.kind, j.state, attemptText(j), j.last_error || '', timeEl(j.created_at)] }))) :
      h('p', { class: 'muted' }, 'No recent jobs.'));
  }

  // The inventory is read again only when the node says it changed
  // (inspected_at).
  let shownInventory;
  async function loadInventory(n) {
    const at = n.inspected_at || '';
    if (at === shownInventory) return;
    if (!at) {
      replace(inventory, h('p', { class: 'muted' }, 'Not inspected yet: inspection boots the deploy agent, which reports CPUs, memory, disks and NICs.'));
      shownInventory = at;
      return;
    }
    let doc;
    try {
      doc = await api('GET', path.inventory(id));
    } catch (e) {
      if (e.status !== 404) throw e;
      replace(inventory, h('p', { class: 'muted' }, e.message));
      shownInventory = at;
      return;
    }
    shownInventory = at;
    replace(inventory, inventoryView(doc));
  }

  // The instance is read again only when the node holds another one.
  async function loadInstance(n) {
    if (!n.instance_id) { instance = null; return; }
    if (instance && instance.id === n.instance_id) return;
    try {
      instance = await api('GET', path.instance(n.instance_id));
    } catch (e) {
      if (e.status !== 404 && e.status !== 403) throw e;
      instance = { id: n.instance_id, name: '' }; // gone meanwhile, or not ours
    }
  }

  function instanceCell(n) {
    if (!n.instance_id) return '';
    if (!instance || !instance.name) return h('code', null, n.instance_id);
    const href = '#/instances' + (admin ? '?project=' + encodeURIComponent(instance.project) : '');
    return h('span', null, h('a', { href, id: 'f-instance' }, instance.name), ` (project ${instance.project}, ${instance.state})`);
  }

  // flowCell lists the flow's steps, the current one marked, and since
  // when it runs.
  function flowCell(f) {
    const at = f.step_index;
    return h('span', { id: 'f-flow' }, `${f.name}: step ${flowText(f)} `,
      h('span', { class: 'muted' }, `since ${ago(f.step_started_at)} ago`),
      h('ol', { class: 'steps', 'aria-label': `${f.name} steps` }, f.steps.map((s, i) =>
        h('li', { class: i < at ? 'done' : i === at ? 'current' : '', 'aria-current': i === at ? 'step' : null }, s))));
  }

  function agentCell(a) {
    return h('span', { id: 'f-agent' }, `${a.purpose}: ${agentText(a)}`, ' ', agentProgress(a),
      a.last_seen_at ? h('span', { class: 'muted' }, ` · heard ${ago(a.last_seen_at)} ago`) : '');
  }

  function render(n) {
    replace(title, n.name);
    replace(root.querySelector('#crumb'), n.name);
    document.title = `${n.name} · Bare metal fleet`;
    const { cls, label } = look(n);
    badge.className = 'badge ' + cls;
    replace(badge, label);
    replace(status, dl([
      ['Provision state', h('span', { id: 'f-state' }, n.provision_state)],
      n.flow ? ['Flow', flowCell(n.flow)] : null,
      n.agent ? ['Deploy agent', agentCell(n.agent)] : null,
      ['Power', h('span', { id: 'f-power' }, n.power_state)],
      ['Maintenance', h('span', { id: 'f-maintenance' }, n.maintenance ? `yes: ${n.maintenance_reason}` : 'no')],
      ['Fault', h('span', { id: 'f-fault', class: n.fault ? 'bad' : '' }, n.fault || 'none')],
      n.fault_since ? ['Fault since', h('span', null, timeEl(n.fault_since), ` (${ago(n.fault_since)})`)] : null,
      ['Health', h('span', { id: 'f-health', class: n.health && n.health.state === 'critical' ? 'bad' : '' },
        n.health ? [n.health.state, ...(n.health.reasons || [])].join(': ') + (n.health.hottest_c ? ` (hottest ${Math.round(n.health.hottest_c)} °C)` : '') : '')],
      admin ? ['Last error', h('span', { id: 'f-last-error' }, n.last_error || '')] : null,
      ['Instance', instanceCell(n)],
    ]));
    const p = n.properties || {};
    replace(hardware, dl([
      ['Driver', n.driver], ['Resource class', h('span', { id: 'f-class' }, n.resource_class)],
      ['Traits', h('span', { id: 'f-traits' }, (n.traits || []).join(' '))],
      ['Derived traits', h('span', { id: 'f-derived-traits', title: 'from inspection and the BMC' }, (n.derived_traits || []).join(' '))],
      ['Owner', h('span', { id: 'f-owner' }, n.owner || 'any project')],
      declaresSettings(n) ? ['Hardware settings', h('span', { id: 'f-settings' }, settingsText(n))] : null,
      ['CPUs', p.cpus ? String(p.cpus) : ''], ['Memory', p.memory_mb ? `${p.memory_mb} MiB` : ''],
      ['Local disk', p.local_gb ? `${p.local_gb} GB` : ''], ['CPU architecture', p.cpu_arch || ''],
      (n.property_overrides || []).length ? ['Set by an operator', n.property_overrides.join(', ')] : null,
      ['Inspected', n.inspected_at ? timeEl(n.inspected_at) : 'never'],
    ]));
    if (bmc && n.bmc) {
      replace(bmc, dl([
        ['Address', h('code', { id: 'f-bmc-address' }, n.bmc.address)], ['Username', n.bmc.username],
        ['Password', n.bmc.password_set ? 'set (never shown)' : 'not set'],
        ['System', n.bmc.system_id || ''], ['TLS verify', n.bmc.insecure ? 'off (insecure)' : 'on'],
        n.bmc.cipher_suite ? ['IPMI cipher suite', String(n.bmc.cipher_suite)] : null,
      ]));
    }
    replace(identity, dl([
      ['ID', h('code', null, n.id)], ['Created', timeEl(n.created_at)], ['Updated', timeEl(n.updated_at)], ['Version', String(n.version)],
    ]));
    if (actions) actions.update(n);
  }

  // declaresSettings and settingsText tell the hardware settings the node
  // declares (BIOS, Secure Boot, RAID, firmware; admins see them) and
  // whether the BMC shows them.
  function declaresSettings(n) {
    return Object.keys(n.bios_settings || {}).length > 0 || n.secure_boot !== null && n.secure_boot !== undefined ||
      n.raid || (n.firmware || []).length > 0;
  }
  function settingsText(n) {
    const hw = n.hardware;
    if (!hw) return '';
    if (n.provision_state === 'configuring') return 'being applied: ' + hw.unmet.join('; ');
    if (hw.waiting) return 'waiting for the node to be free: ' + hw.unmet.join('; ');
    if (hw.unmet.length) return 'not in effect: ' + hw.unmet.join('; ');
    return hw.read_at ? `in effect (read back ${ago(hw.read_at)})` : 'not read yet';
  }

  const poll = live(async () => {
    try {
      node = await api('GET', path.node(id));
    } catch (e) {
      if (e.status === 404) {
        if (actions) actions.gone();
        replace(status, h('p', { class: 'error', id: 'node-gone' }, 'This node does not exist (any more). ', h('a', { href: '#/' }, 'Back to the overview')));
        return;
      }
      throw e;
    }
    await loadInstance(node);
    render(node);
    if (admin) await Promise.all([loadEvents(), loadJobs(), loadInventory(node)]);
  });
  return poll;
}

const GiB = 1024 ** 3;

function bytes(n) {
  if (!n) return '';
  return n >= 1000 * GiB ? `${(n / 1024 ** 4).toFixed(1)} TiB` : `${(n / GiB).toFixed(n < 10 * GiB ? 1 : 0)} GiB`;
}

// inventoryView shows what the agent reported: the machine, its disks
// (the root disk is chosen among them) and NICs, each with the switch
// port it heard by LLDP.
function inventoryView(doc) {
  const inv = doc.inventory || {};
  const sys = inv.system || {};
  const secure = sys.secure_boot === true ? 'on' : sys.secure_boot === false ? 'off' : 'unknown';
  return h('div', null,
    dl([
      ['Reported', timeEl(doc.inspected_at)],
      ['Machine', [sys.vendor, sys.product].filter(Boolean).join(' ')],
      ['Serial', sys.serial || ''], ['System UUID', sys.uuid ? h('code', null, sys.uuid) : ''],
      ['Boot mode', sys.boot_mode ? `${sys.boot_mode}${sys.boot_mode === 'uefi' ? `, Secure Boot ${secure}` : ''}` : ''],
      ['CPUs', inv.cpus ? String(inv.cpus) : ''], ['Memory', bytes(inv.memory_bytes)],
    ], { id: 'inv-system' }),
    h('h3', null, 'Disks'),
    (inv.disks || []).length ? table(null, ['Device', 'Size', 'Model', 'Serial', 'Kind'],
      inv.disks.map((d) => ({ attrs: { 'data-disk': d.name }, cells: [h('code', null, d.path || d.name), bytes(d.size_bytes), d.model || '', d.serial || '',
        [d.rotational ? 'rotational' : 'solid state', d.removable ? 'removable' : ''].filter(Boolean).join(', ')] })), { id: 'inv-disks' }) :
      h('p', { class: 'muted' }, 'No disks reported.'),
    h('h3', null, 'Network interfaces'),
    (inv.nics || []).length ? table(null, ['Name', 'MAC', 'Link', 'Addresses', 'Switch port (LLDP)'],
      inv.nics.map((c) => ({ attrs: { 'data-nic': c.name }, cells: [c.name, h('code', null, c.mac),
        c.link_up ? `up${c.speed_mbps ? `, ${c.speed_mbps} Mb/s` : ''}` : 'down', (c.ipv4 || []).join(', '), switchPort(c.lldp)] })), { id: 'inv-nics' }) :
      h('p', { class: 'muted' }, 'No network interfaces reported.'));
}

// switchPort says which switch port a NIC heard by LLDP: the switch (its
// name, else its chassis ID), the port, its untagged VLAN; empty when the
// agent heard none.
function switchPort(l) {
  if (!l) return '';
  const sw = l.system_name || l.chassis_id;
  return [`${sw} ${l.port_id}`, l.vlan_id ? `VLAN ${l.vlan_id}` : '', l.port_description ? `(${l.port_description})` : ''].filter(Boolean).join(' ');
}
