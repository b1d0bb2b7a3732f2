// The REST API as the dashboard uses it: the same /v1 routes, bearer
// tokens and problem documents as every other client. The token lives in
// this tab's sessionStorage: it survives a reload, not the tab, and is
// never written to a cookie (so no other site can make the browser send
// it, and the controller needs no CSRF defence for the dashboard).

const KEY = 'baremetal.token';

export class ApiError extends Error {
  constructor(status, problem, path) {
    const detail = (problem && (problem.detail || problem.title)) || `HTTP ${status}`;
    super(detail);
    this.status = status;
    this.code = problem && problem.code;
    this.field = problem && problem.field;
    this.path = path;
  }
}

export function token() { return sessionStorage.getItem(KEY) || ''; }
export function setToken(t) { sessionStorage.setItem(KEY, t); }
export function clearToken() { sessionStorage.removeItem(KEY); }

// CLIENT says what the dashboard is, as the CLI and the provider say it in
// User-Agent (which a page cannot set): events name it beside the token,
// so an operator sees that a change was made here.
const CLIENT = 'baremetal-dashboard';

// api calls one route; extra are more request headers (If-Match). A 401
// clears the token and tells the app (event "unauthorized"), which shows
// the login form again.
export async function api(method, path, body, extra) {
  const headers = { Accept: 'application/json', Authorization: 'Bearer ' + token(), 'Baremetal-Client': CLIENT };
  const init = { method, headers, cache: 'no-store', credentials: 'omit', redirect: 'error' };
  Object.assign(headers, extra);
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, { detail: 'the controller did not answer: ' + e.message }, path);
  }
  let doc = null;
  const text = await res.text();
  if (text) {
    try { doc = JSON.parse(text); } catch { doc = { detail: text.slice(0, 200) }; }
  }
  if (!res.ok) {
    if (res.status === 401) {
      clearToken();
      window.dispatchEvent(new CustomEvent('unauthorized', { detail: doc && doc.detail }));
    }
    throw new ApiError(res.status, doc, path);
  }
  return doc;
}

// listAll pages through a cursor-paginated list (nodes, events,
// instances) and returns every item; max bounds the pages read.
export async function listAll(path, params = {}, max = 50) {
  const items = [];
  let cursor = '';
  for (let i = 0; i < max; i++) {
    const q = new URLSearchParams({ ...params, limit: '1000' });
    if (cursor) q.set('cursor', cursor);
    const page = await api('GET', `${path}?${q}`);
    items.push(...page.items);
    if (!page.next_cursor) return { items, complete: true };
    cursor = page.next_cursor;
  }
  return { items, complete: false };
}

// whoami tells the role of the token: the API has no such route, so it
// asks one an admin may read and a member may not.
export async function whoami() {
  await api('GET', '/v1/nodes?limit=1'); // any valid token; 401 otherwise
  try {
    await api('GET', '/v1/jobs?limit=1');
    return 'admin';
  } catch (e) {
    if (e.status === 403) return 'member';
    throw e;
  }
}

export const path = {
  node: (id) => '/v1/nodes/' + encodeURIComponent(id),
  events: (id) => '/v1/nodes/' + encodeURIComponent(id) + '/events',
  power: (id) => '/v1/nodes/' + encodeURIComponent(id) + '/power',
  inspect: (id) => '/v1/nodes/' + encodeURIComponent(id) + '/inspect',
  inventory: (id) => '/v1/nodes/' + encodeURIComponent(id) + '/inventory',
  instance: (id) => '/v1/instances/' + encodeURIComponent(id),
};

// etag is the entity tag of a node or instance of this version, for
// If-Match: a change made meanwhile fails the request (412) instead of
// being overridden by what the user decided on an older view.
export const etag = (version) => `"${version}"`;
