// Fleet overview: counts by provision state, fault, maintenance and power,
// and a grid of every node coloured by what an operator would look at
// first (fault, then maintenance, then provision state), refreshed live.
// The states, faults and power states are the API's (enums.js).
import { listAll } from './api.js';
import { h, replace } from './dom.js';
import { enums } from './enums.js';
import { live } from './shell.js';

// look is the tile's colour class and its one-line label.
export function look(n) {
  if (n.fault) return { cls: 'faulted', label: 'fault: ' + n.fault };
  if (n.maintenance) return { cls: 'maintenance', label: 'maintenance' };
  return { cls: 'state-' + n.provision_state, label: n.provision_state };
}

export function schedulable(n) {
  return n.provision_state === 'available' && !n.maintenance && !n.fault;
}

// agentText says what a node's deploy agent is doing ("" for none):
// "erase 42%", "write_image succeeded", "agent booting".
export function agentText(a) {
  if (!a) return '';
  if (!a.last_seen_at) return 'agent booting';
  if (!a.command) return 'agent reporting';
  if (a.state === 'running' || !a.state) return `${a.command} ${a.progress || 0}%`;
  return `${a.command} ${a.state}`;
}

// flowText says where a node's flow stands ("" for none): its step and
// the step's place among the flow's, "erase 2/4".
export function flowText(f) {
  if (!f) return '';
  return `${f.step} ${f.step_index + 1}/${f.steps.length}`;
}

// agentProgress is a <progress> of a running agent command, or null.
export function agentProgress(a, attrs) {
  if (!a || !a.command || (a.state && a.state !== 'running')) return null;
  return h('progress', { max: 100, value: a.progress || 0, 'aria-label': `${a.command}: ${a.progress || 0}%`, ...attrs });
}

// instanceNames maps instance ids to names, read again only when a node
// holds an instance it does not know (instances are not renamed).
export function instanceNames() {
  let names = {};
  return async (nodes) => {
    if (nodes.some((n) => n.instance_id && !(n.instance_id in names))) {
      const { items } = await listAll('/v1/instances');
      names = Object.fromEntries(items.map((i) => [i.id, i.name]));
      for (const n of nodes) if (n.instance_id && !(n.instance_id in names)) names[n.instance_id] = ''; // not ours to see
    }
    return names;
  };
}

export function overview(root) {
  let filter = { kind: 'all', value: '' };
  let text = '';
  let nodes = [];
  let names = {};
  const readNames = instanceNames();

  const summary = h('p', { class: 'summary', id: 'summary' }, 'Loading…');
  const counts = h('div', { class: 'counts', id: 'counts' });
  const search = h('input', { type: 'search', id: 'filter', placeholder: 'name, class or instance…', 'aria-describedby': 'shown' });
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
    if (text && ![n.name, n.resource_class, names[n.instance_id] || ''].some((s) => s.toLowerCase().includes(text))) return false;
    switch (filter.kind) {
      case 'state': return n.provision_state === filter.value;
      case 'fault': return filter.value === '*' ? !!n.fault : n.fault === filter.value;
      case 'maintenance': return n.maintenance;
      case 'schedulable': return schedulable(n);
      case 'power': return n.power_state === filter.value;
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

  // tally counts nodes by key, with every value of the API's list shown
  // (zeros too) in its order, and any other value the nodes have after.
  function tally(list, key) {
    const by = new Map(list.map((v) => [v, 0]));
    for (const n of nodes) {
      const v = key(n);
      if (v) by.set(v, (by.get(v) || 0) + 1);
    }
    return [...by];
  }

  function draw() {
    const byFault = tally(enums.faults, (n) => n.fault).filter(([, c]) => c > 0);
    const faulted = nodes.filter((n) => n.fault).length;
    const had = document.activeElement && counts.contains(document.activeElement) ? document.activeElement.dataset : null;
    replace(counts,
      h('section', { 'aria-labelledby': 'c-state' }, h('h2', { id: 'c-state' }, 'Provision state'),
        h('div', { class: 'row' }, tally(enums.provisionStates, (n) => n.provision_state).map(([s, c]) => countButton('state', s, s, c, 'state-' + s)))),
      h('section', { 'aria-labelledby': 'c-health' }, h('h2', { id: 'c-health' }, 'Health'),
        h('div', { class: 'row' },
          countButton('schedulable', '', 'schedulable', nodes.filter(schedulable).length, 'state-available'),
          countButton('fault', '*', 'faulted', faulted, 'faulted'),
          byFault.map(([f, c]) => countButton('fault', f, f, c, 'faulted')),
          countButton('maintenance', '', 'maintenance', nodes.filter((n) => n.maintenance).length, 'maintenance'))),
      h('section', { 'aria-labelledby': 'c-power' }, h('h2', { id: 'c-power' }, 'Power'),
        h('div', { class: 'row' }, tally(enums.powerStates, (n) => n.power_state).map(([p, c]) => countButton('power', p, 'power ' + p, c, 'power-' + p)))));
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
          h('span', { class: 'name' }), h('span', { class: 'label' }), h('span', { class: 'sub' }), h('span', { class: 'sub' })));
        tiles.set(n.id, li);
      }
      const a = li.firstChild;
      const { cls, label } = look(n);
      const inst = n.instance_id ? names[n.instance_id] || 'an instance' : '';
      const doing = agentText(n.agent);
      const at = flowText(n.flow);
      a.className = 'tile ' + cls;
      a.dataset.name = n.name;
      a.dataset.state = n.provision_state;
      a.dataset.fault = n.fault || '';
      a.dataset.maintenance = String(n.maintenance);
      a.dataset.class = n.resource_class;
      a.dataset.instance = inst;
      a.dataset.agent = doing;
      a.dataset.step = at;
      // The colour's label, the class and instance, then the state the
      // label leaves out, what the agent does (else the power) and the
      // flow's step.
      const lines = [
        n.name,
        label,
        [n.resource_class, inst].filter(Boolean).join(' · '),
        [n.maintenance && n.fault ? 'maintenance' : '', label === n.provision_state ? '' : n.provision_state,
          doing || 'power ' + n.power_state, at].filter(Boolean).join(' · '),
      ];
      a.title = `${n.name}: ${n.provision_state}, power ${n.power_state}, class ${n.resource_class}` +
        (inst ? `, instance ${inst}` : '') + (n.flow ? `, ${n.flow.name} step ${at}` : '') + (doing ? `, agent: ${doing}` : '') +
        (n.fault ? `, fault ${n.fault}` : '') + (n.maintenance ? `, maintenance: ${n.maintenance_reason}` : '');
      lines.forEach((t, i) => { if (a.children[i].textContent !== t) a.children[i].textContent = t; });
      const bar = a.querySelector('progress');
      const want = agentProgress(n.agent);
      if (!want) { if (bar) bar.remove(); } else if (!bar) a.append(want); else if (bar.value !== want.value) bar.value = want.value;
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
    names = await readNames(items);
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
  const items = [['faulted', 'faulted'], ['maintenance', 'maintenance'], ...enums.provisionStates.map((s) => ['state-' + s, s])];
  return h('ul', { class: 'legend', 'aria-label': 'Colour legend' },
    items.map(([cls, label]) => h('li', null, h('span', { class: 'swatch ' + cls, 'aria-hidden': 'true' }), label)));
}
