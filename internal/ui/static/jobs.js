// Durable jobs (admin): what is queued, running or retrying, with its
// attempts and last error. The states are the API's (enums.js).
import { api, listAll } from './api.js';
import { h, replace, table, timeEl } from './dom.js';
import { enums, FINISHED } from './enums.js';
import { live } from './shell.js';

// attemptText is a job's attempt and its bound: "2 / 6", or for a kind
// that retries until it succeeds (max_attempts left out) "2 (retries
// until it succeeds)", just "2" once it is finished.
export function attemptText(j) {
  if (j.max_attempts) return `${j.attempt} / ${j.max_attempts}`;
  return FINISHED.includes(j.state) ? String(j.attempt) : `${j.attempt} (retries until it succeeds)`;
}

export function jobs(root, { query }) {
  // "active" is the dashboard's own view of the states not finished.
  const ACTIVE = enums.jobStates.filter((s) => !FINISHED.includes(s));
  const STATES = ['active', 'all', ...ACTIVE, ...enums.jobStates.filter((s) => FINISHED.includes(s))];
  const state = STATES.includes(query.get('state')) ? query.get('state') : 'active';
  const select = h('select', { id: 'job-state', name: 'state' },
    STATES.map((s) => h('option', { value: s, selected: s === state }, s === 'active' ? 'not finished' : s === 'all' ? 'all (recent)' : s)));
  select.addEventListener('change', () => { location.hash = '#/jobs?state=' + select.value; });
  const body = h('div', { id: 'jobs' }, h('p', { class: 'muted' }, 'Loading…'));
  replace(root, h('h1', null, 'Jobs'),
    h('div', { class: 'toolbar' }, h('label', { for: 'job-state' }, 'State'), select,
      h('span', { class: 'muted' }, 'newest first, at most 100 per state')),
    body);

  let shown = null;
  let names = null;
  return live(async () => {
    const states = state === 'active' ? ACTIVE : state === 'all' ? [''] : [state];
    const lists = await Promise.all(states.map((s) => api('GET', '/v1/jobs?limit=100' + (s ? '&state=' + s : ''))));
    const items = lists.flatMap((l) => l.items).sort((a, b) => b.id - a.id);
    if (!names || items.some((j) => j.node_id && !(j.node_id in names))) {
      names = Object.fromEntries((await listAll('/v1/nodes', { include_deleting: 'true' })).items.map((n) => [n.id, n.name]));
    }
    const key = JSON.stringify(items);
    if (key === shown) return;
    shown = key;
    if (!items.length) {
      replace(body, h('p', { class: 'muted' }, state === 'active' ? 'Nothing queued, running or retrying.' : 'No jobs.'));
      return;
    }
    replace(body, table(null, ['ID', 'Kind', 'State', 'Node', 'Attempt', 'Last error', 'Scheduled', 'Created', 'Finished'],
      items.map((j) => ({
        attrs: { 'data-kind': j.kind, 'data-state': j.state },
        cells: [String(j.id), j.kind, h('span', { class: 'pill job-' + j.state }, j.state),
          j.node_id ? (names[j.node_id] ? h('a', { href: '#/nodes/' + encodeURIComponent(j.node_id) }, names[j.node_id]) : h('code', { title: 'node no longer exists' }, j.node_id.slice(0, 8))) : '',
          attemptText(j), h('span', { class: 'err' }, j.last_error || ''),
          timeEl(j.scheduled_at), timeEl(j.created_at), timeEl(j.finalized_at)],
      }))));
  }, 3000);
}
