// The dashboard's shell: login, role, navigation and the hash router.
import { clearToken, setToken, token, whoami } from './api.js';
import { h, replace } from './dom.js';
import { loadEnums } from './enums.js';
import { overview } from './overview.js';
import { nodeDetail } from './node.js';
import { instances } from './instances.js';
import { jobs } from './jobs.js';

const main = document.getElementById('main');
const statusEl = document.getElementById('status');

// session.role is what the API lets this token do; the views use it only
// to leave out what the API would refuse (the API decides).
export const session = { role: '' };

// Routes are in the fragment (#/nodes/<id>), so the controller serves one
// page and a reload or a bookmark lands on the same view.
const routes = [
  [/^\/$/, overview],
  [/^\/nodes\/([^/?]+)$/, nodeDetail],
  [/^\/instances$/, instances],
  [/^\/jobs$/, jobs, 'admin'],
];

let current = null; // the view shown: { stop() }
let loggingIn = false; // a 401 then is the login form's to report
let routing = 0; // the latest route(): an earlier one still waiting gives way

function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '/';
  const [p, q] = raw.split('?');
  return { path: p || '/', query: new URLSearchParams(q || '') };
}

function showChrome(on) {
  document.getElementById('nav').hidden = !on;
  document.getElementById('logout').hidden = !on;
  const who = document.getElementById('who');
  who.hidden = !on;
  replace(who, on ? `signed in as ${session.role}` : '');
  for (const a of document.querySelectorAll('[data-admin]')) a.hidden = session.role !== 'admin';
}

function markNav(p) {
  for (const a of document.querySelectorAll('#nav a')) {
    const target = a.getAttribute('href').slice(1);
    const here = target === '/' ? p === '/' || p.startsWith('/nodes/') : p.startsWith(target);
    if (here) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
}

async function route() {
  if (current) { current.stop(); current = null; }
  if (!token() || !session.role) return login();
  const { path, query } = parseHash();
  markNav(path);
  const seq = ++routing;
  try {
    await loadEnums(); // once: the states, faults... every view shows
  } catch (e) {
    if (e.status === 401 || seq !== routing) return; // the login form, or a later route, is shown
    replace(main, h('div', { class: 'view' }, h('h1', null, 'The API could not be read'),
      h('p', { class: 'error', role: 'alert' }, 'Reading the API document (/openapi.json) failed: ' + e.message + '. Reload to try again.')));
    return;
  }
  if (seq !== routing) return;
  for (const [re, view, needs] of routes) {
    const m = path.match(re);
    if (m) {
      const el = h('div', { class: 'view' });
      replace(main, el);
      if (needs && needs !== session.role) {
        // The API would refuse every request of this view.
        replace(el, h('h1', null, 'Not for this token'), h('p', null, `This page is for ${needs}s; you are signed in as ${session.role}.`));
        el.querySelector('h1').tabIndex = -1;
        el.querySelector('h1').focus();
        return;
      }
      current = view(el, { params: m.slice(1).map(decodeURIComponent), query, role: session.role }) || null;
      const h1 = main.querySelector('h1');
      if (h1) { h1.tabIndex = -1; h1.focus({ preventScroll: true }); }
      return;
    }
  }
  replace(main, h('div', { class: 'view' }, h('h1', null, 'Not found'), h('p', null, h('a', { href: '#/' }, 'Back to the overview'))));
}

function login(message) {
  routing++; // a route still waiting must not show its view over the form
  session.role = '';
  showChrome(false);
  const input = h('input', { id: 'token', name: 'token', type: 'password', autocomplete: 'off', spellcheck: 'false', required: true, size: 48 });
  const err = h('p', { class: 'error', role: 'alert', id: 'login-error' }, message || '');
  const button = h('button', { type: 'submit', class: 'primary' }, 'Log in');
  const form = h('form', { class: 'login', id: 'login' },
    h('h1', null, 'Log in'),
    h('p', null, 'Paste an API token (admin or member). It is kept in this tab only, until you log out or close the tab.'),
    h('label', { for: 'token' }, 'API token'), input, button, err);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    button.disabled = true;
    replace(err);
    setToken(input.value.trim());
    loggingIn = true;
    try {
      session.role = await whoami();
      showChrome(true);
      await route();
    } catch (e) {
      clearToken();
      replace(err, e.status === 401 ? 'That token was not accepted (unknown, expired or revoked).' : 'Could not log in: ' + e.message);
      input.focus();
    } finally {
      loggingIn = false;
      button.disabled = false;
    }
  });
  replace(main, form);
  input.focus();
}

window.addEventListener('hashchange', route);
window.addEventListener('unauthorized', (e) => {
  if (loggingIn) return;
  if (current) { current.stop(); current = null; }
  login('Your token was rejected' + (e.detail ? ': ' + e.detail : '') + '. Log in again.');
});
document.getElementById('logout').addEventListener('click', () => {
  clearToken();
  if (current) { current.stop(); current = null; }
  replace(statusEl);
  history.replaceState(null, '', '#/');
  login();
});

(async () => {
  if (!token()) return login();
  try {
    session.role = await whoami();
    showChrome(true);
    route();
  } catch (e) {
    if (e.status !== 401) login('Could not reach the controller: ' + e.message);
  }
})();
