// Fleet overview: counts by provision state, fault and maintenance, and a
// grid of every node coloured by what an operator would look at first
// (fault, then maintenance, then provision state), refreshed live.
import { listAll } from './api.js';
import { h, replace } from './dom.js';
import { live } from './shell.js';

// The API's provision states, in lifecycle order (zeros are shown too).
export const STATES = ['enroll', 'available', 'deploying', 'active', 'deploy_failed', 'cleaning', 'deleting'];

// look is the tile's colour class and its one-line label.
export function look(n) {
  if (n.fault) return { cls: 'faulted', label: 'fault: ' + n.fault };
  if (n.maintenance) return { cls: 'maintenance', label: 'maintenance' };
  return { cls: 'state-' + n.provision_state, label: n.provision_state };
}

export function schedulable(n) {
  return n.provision_state === 'available' && !n.maintenance && !n.fault;
}

export function overview(root) {
  let filter = { kind: 'all', value: '' };
  let text = '';
  let nodes = [];

  const summary = h('p', { class: 'summary', id: 'summary' }, 'Loading…');
  const counts = h('div', { class: 'counts', id: 'counts' });
  const search = h('input', { type: 'search', id: 'filter', placeholder: 'name contains…', 'aria-describedby': 'shown' });
  const shown = h('span', { id: 'shown', class: 'muted' });
  const grid = h('ul', { class: 'grid', id: 'grid', 'aria-label': 'Nodes' });
  const tiles = new Map(); // node id → <li>, kept so focus survives a refresh

  search.addEventListener('input', () => { text = search.value.trim().toLowerCase(); draw(); });

  replace(root,
    h('h1', null, 'Fleet overview'),
    summary,
    counts,
    h('div', { class: 'toolbar' },
      h('label', { for: 'filter' }, 'Filter nodes'), search, shown),
    legend(),
    grid);

  function pick(kind, value) {
    filter = filter.kind === kind && filter.value === value ? { kind: 'all', value: '' } : { kind, value };
    draw();
  }

  function matches(n) {
    if (text && !n.name.toLowerCase().includes(text)) return false;
    switch (filter.kind) {
      case 'state': return n.provision_state === filter.value;
      case 'fault': return filter.value === '*' ? !!n.fault : n.fault === filter.value;
      case 'maintenance': return n.maintenance;
      case 'schedulable': return schedulable(n);
      default: return true;
    }
  }

  function countButton(kind, value, label, count, cls) {
    const on = filter.kind === kind && filter.value === value;
    return h('button', {
      type: 'button', class: 'count ' + (cls || ''), 'aria-pressed': on ? 'true' : 'false',
      dataset: { kind, value }, onclick: () => pick(kind, value),
      title: on ? 'Show all nodes' : `Show only ${label}`,
    }, h('span', { class: 'n' }, String(count)), h('span', { class: 'what' }, label));
  }

  function draw() {
    const byState = Object.fromEntries(STATES.map((s) => [s, 0]));
    const byFault = {};
    let faulted = 0, maint = 0, sched = 0;
    for (const n of nodes) {
      byState[n.provision_state] = (byState[n.provision_state] || 0) + 1;
      if (n.fault) { faulted++; byFault[n.fault] = (byFault[n.fault] || 0) + 1; }
      if (n.maintenance) maint++;
      if (schedulable(n)) sched++;
    }
    const had = document.activeElement && counts.contains(document.activeElement) ? document.activeElement.dataset : null;
    replace(counts,
      h('section', { 'aria-labelledby': 'c-state' }, h('h2', { id: 'c-state' }, 'Provision state'),
        h('div', { class: 'row' }, Object.entries(byState).map(([s, c]) => countButton('state', s, s, c, 'state-' + s)))),
      h('section', { 'aria-labelledby': 'c-health' }, h('h2', { id: 'c-health' }, 'Health'),
        h('div', { class: 'row' },
          countButton('schedulable', '', 'schedulable', sched, 'state-available'),
          countButton('fault', '*', 'faulted', faulted, 'faulted'),
          Object.entries(byFault).sort().map(([f, c]) => countButton('fault', f, f, c, 'faulted')),
          countButton('maintenance', '', 'maintenance', maint, 'maintenance'))));
    if (had) {
      const again = [...counts.querySelectorAll('button')].find((b) => b.dataset.kind === had.kind && b.dataset.value === had.value);
      if (again) again.focus();
    }

    const seen = new Set();
    let visible = 0;
    for (const n of nodes) {
      seen.add(n.id);
      let li = tiles.get(n.id);
      if (!li) {
        li = h('li', null, h('a', { class: 'tile', href: '#/nodes/' + encodeURIComponent(n.id) },
          h('span', { class: 'name' }), h('span', { class: 'label' }), h('span', { class: 'sub' })));
        tiles.set(n.id, li);
      }
      const a = li.firstChild;
      const { cls, label } = look(n);
      a.className = 'tile ' + cls;
      a.dataset.name = n.name;
      a.dataset.state = n.provision_state;
      a.dataset.fault = n.fault || '';
      a.dataset.maintenance = String(n.maintenance);
      const sub = [n.maintenance && n.fault ? 'maintenance' : '', 'power ' + n.power_state].filter(Boolean).join(' · ');
      a.title = `${n.name}: ${n.provision_state}, power ${n.power_state}` +
        (n.fault ? `, fault ${n.fault}` : '') + (n.maintenance ? `, maintenance: ${n.maintenance_reason}` : '');
      if (a.children[0].textContent !== n.name) a.children[0].textContent = n.name;
      if (a.children[1].textContent !== label) a.children[1].textContent = label;
      if (a.children[2].textContent !== sub) a.children[2].textContent = sub;
      li.hidden = !matches(n);
      if (!li.hidden) visible++;
    }
    for (const [id, li] of tiles) {
      if (!seen.has(id)) { li.remove(); tiles.delete(id); }
    }
    // Order by name; moving only what is out of place keeps focus.
    let prev = null;
    for (const n of nodes) {
      const li = tiles.get(n.id);
      const want = prev ? prev.nextSibling : grid.firstChild;
      if (want !== li) grid.insertBefore(li, want);
      prev = li;
    }
    replace(shown, filter.kind === 'all' && !text ? '' : `${visible} of ${nodes.length} shown`);
  }

  return live(async () => {
    const { items, complete } = await listAll('/v1/nodes', { include_deleting: 'true' });
    nodes = items.sort((a, b) => a.name.localeCompare(b.name));
    const faulted = nodes.filter((n) => n.fault).length;
    replace(summary,
      `${nodes.length} nodes · ${nodes.filter(schedulable).length} schedulable · ${faulted} faulted · updated `,
      h('time', { id: 'updated' }, new Date().toLocaleTimeString()),
      complete ? '' : ' (list cut at 50,000 nodes)');
    draw();
  });
}

function legend() {
  const items = [['faulted', 'faulted'], ['maintenance', 'maintenance'], ...STATES.map((s) => ['state-' + s, s])];
  return h('ul', { class: 'legend', 'aria-label': 'Colour legend' },
    items.map(([cls, label]) => h('li', null, h('span', { class: 'swatch ' + cls, 'aria-hidden': 'true' }), label)));
}
