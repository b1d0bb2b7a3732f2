// Instances of a project. A member sees its own project's (the API
// decides which); an admin picks a project or sees all.
import { listAll } from './api.js';
import { h, replace, table, timeEl } from './dom.js';
import { agentProgress, agentText } from './overview.js';
import { live } from './shell.js';

export function instances(root, { query, role }) {
  const project = query.get('project') || '';
  const body = h('div', { id: 'instances' }, h('p', { class: 'muted' }, 'Loading…'));
  let form = null;
  if (role === 'admin') {
    const input = h('input', { id: 'project', name: 'project', value: project, placeholder: 'all projects', size: 24 });
    form = h('form', { class: 'toolbar', id: 'project-form' },
      h('label', { for: 'project' }, 'Project'), input, h('button', { type: 'submit' }, 'Show'));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const p = input.value.trim();
      location.hash = '#/instances' + (p ? '?project=' + encodeURIComponent(p) : '');
    });
  }
  replace(root, h('h1', null, project ? `Instances of ${project}` : role === 'admin' ? 'Instances (all projects)' : 'Instances of your project'), form, body);

  let shown = null;
  let nodes = {};
  return live(async () => {
    const [{ items }, list] = await Promise.all([
      listAll('/v1/instances', project ? { project } : {}),
      listAll('/v1/nodes', { include_deleting: 'true' }),
    ]);
    nodes = Object.fromEntries(list.items.map((n) => [n.id, n]));
    const key = JSON.stringify([items, items.map((i) => { const n = nodes[i.node_id]; return n ? [n.name, n.agent] : null; })]);
    if (key === shown) return;
    shown = key;
    if (!items.length) {
      replace(body, h('p', { class: 'muted' }, 'No instances.'));
      return;
    }
    items.sort((a, b) => a.name.localeCompare(b.name));
    replace(body, table(null, ['Name', 'Project', 'State', 'Node', 'Power (wanted / observed)', 'Ready', 'Last error', 'Created'],
      items.map((i) => ({
        attrs: { 'data-name': i.name },
        cells: [i.name, i.project, h('span', { class: 'pill inst-' + i.state }, i.state),
          i.node_id ? nodeCell(i.node_id, nodes[i.node_id]) : '',
          `${i.power_state || '—'} / ${i.observed_power_state || '—'}`, i.ready ? 'yes' : 'no',
          i.last_error || '', timeEl(i.created_at)],
      }))));
  }, 3000);
}

// nodeCell names an instance's node and, while its deploy agent works
// (an image being written), how far it is.
function nodeCell(id, n) {
  const link = h('a', { href: '#/nodes/' + encodeURIComponent(id) }, n ? n.name : id);
  if (!n || !n.agent) return link;
  return h('span', null, link, h('span', { class: 'muted' }, ' · ' + agentText(n.agent)), ' ', agentProgress(n.agent));
}
