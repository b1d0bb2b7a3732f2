// Node detail: fields, power, fault, the event timeline (who did what
// and why), the node's jobs, and the operator's daily actions, each
// confirmed and each a call of the public API.
import { api, listAll, path } from './api.js';
import { ago, dl, h, replace, table, timeEl } from './dom.js';
import { look } from './overview.js';
import { confirmAction, live, say } from './shell.js';

export function nodeDetail(root, { params, role }) {
  const id = params[0];
  const admin = role === 'admin';
  let node = null;

  const title = h('h1', null, 'Node');
  const badge = h('span', { class: 'badge', id: 'node-badge' });
  const status = h('div', { id: 'node-status' });
  const hardware = h('div', { id: 'node-hardware' });
  const bmc = admin ? h('div', { id: 'node-bmc' }) : null;
  const identity = h('div', { id: 'node-identity' });
  const events = admin ? h('div', { id: 'events' }) : null;
  const jobList = admin ? h('div', { id: 'node-jobs' }) : null;
  const actions = admin ? buildActions() : null;

  replace(root,
    h('p', { class: 'crumbs' }, h('a', { href: '#/' }, 'Overview'), ' › ', h('span', { id: 'crumb' }, id)),
    h('div', { class: 'titlebar' }, title, badge),
    h('div', { class: 'columns' },
      h('div', null,
        h('section', { 'aria-labelledby': 's-status' }, h('h2', { id: 's-status' }, 'Status'), status),
        actions,
        h('section', { 'aria-labelledby': 's-hw' }, h('h2', { id: 's-hw' }, 'Hardware'), hardware),
        bmc && h('section', { 'aria-labelledby': 's-bmc' }, h('h2', { id: 's-bmc' }, 'BMC'), bmc),
        h('section', { 'aria-labelledby': 's-id' }, h('h2', { id: 's-id' }, 'Record'), identity)),
      admin && h('div', null,
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
    const el = h('section', { 'aria-labelledby': 's-actions', id: 'actions' }, h('h2', { id: 's-actions' }, 'Actions'),
      h('h3', null, 'Maintenance'), setForm, clearBox,
      h('h3', null, 'Power'), h('div', { class: 'inline' }, power));
    // Hidden until the node is loaded: the confirmations name it, and a
    // click before the first answer had nothing to confirm.
    el.hidden = true;
    el.update = (n) => {
      el.hidden = false;
      setForm.hidden = n.maintenance;
      clearBox.hidden = !n.maintenance;
      replace(clearBox.firstChild, n.maintenance ? `In maintenance: ${n.maintenance_reason}` : '');
    };
    return el;
  }

  async function act(done, call, job) {
    try {
      const res = await call();
      say(done + (job && res && res.job_id ? ` (job ${res.job_id})` : '') + '.', 'ok');
    } catch (e) {
      say('Failed: ' + e.message, 'error');
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
      items.map((j) => ({ cells: [String(j.id), j.kind, j.state, `${j.attempt}/${j.max_attempts}`, j.last_error || '', timeEl(j.created_at)] }))) :
      h('p', { class: 'muted' }, 'No recent jobs.'));
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
      ['Power', h('span', { id: 'f-power' }, n.power_state)],
      ['Maintenance', h('span', { id: 'f-maintenance' }, n.maintenance ? `yes: ${n.maintenance_reason}` : 'no')],
      ['Fault', h('span', { id: 'f-fault', class: n.fault ? 'bad' : '' }, n.fault || 'none')],
      n.fault_since ? ['Fault since', h('span', null, timeEl(n.fault_since), ` (${ago(n.fault_since)})`)] : null,
      admin ? ['Last error', h('span', { id: 'f-last-error' }, n.last_error || '')] : null,
      ['Instance', n.instance_id || ''],
    ]));
    const p = n.properties || {};
    replace(hardware, dl([
      ['Driver', n.driver], ['Resource class', n.resource_class],
      ['CPUs', p.cpus ? String(p.cpus) : ''], ['Memory', p.memory_mb ? `${p.memory_mb} MiB` : ''],
      ['Local disk', p.local_gb ? `${p.local_gb} GB` : ''], ['CPU architecture', p.cpu_arch || ''],
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

  const poll = live(async () => {
    try {
      node = await api('GET', path.node(id));
    } catch (e) {
      if (e.status === 404) {
        replace(status, h('p', { class: 'error' }, 'This node does not exist (any more).'));
        return;
      }
      throw e;
    }
    render(node);
    if (admin) await Promise.all([loadEvents(), loadJobs()]);
  });
  return poll;
}
