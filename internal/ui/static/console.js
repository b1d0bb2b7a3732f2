// The console page (console.html#<node id>, admins): the node's serial
// console in a terminal widget (xterm.js, vendored in vendor/), over the
// API's WebSocket GET /v1/nodes/{id}/console. A browser cannot set an
// Authorization header on a WebSocket, so the token goes as a second
// subprotocol (bearer.<token>), which the server never echoes: not in the
// URL, where proxies log it. The token is this tab's, as the dashboard's
// (sessionStorage): the page is opened in the same tab.
import { Terminal } from './vendor/xterm.mjs';
import { token } from './api.js';

const SUBPROTOCOL = 'baremetal.console.v1';

const id = decodeURIComponent(location.hash.replace(/^#/, ''));
const statusEl = document.getElementById('console-status');
const titleEl = document.getElementById('console-title');
const back = document.getElementById('back');
back.setAttribute('href', './#/nodes/' + encodeURIComponent(id));

function status(text, kind) {
  statusEl.textContent = text;
  statusEl.dataset.kind = kind || '';
}

function start() {
  if (!id) return status('No node: open the console from a node\u2019s page.', 'error');
  const tok = token();
  if (!tok) return status('Log in on the dashboard first (in this tab), then open the console from the node\u2019s page.', 'error');
  // Subprotocols are HTTP tokens; API tokens (bmt_ and base64url) are.
  if (!/^[A-Za-z0-9._~+-]+$/.test(tok)) return status('This token cannot open a console from a browser.', 'error');

  const term = new Terminal({ convertEol: false, cursorBlink: true, scrollback: 5000, disableStdin: true,
    fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace', fontSize: 14 });
  term.open(document.getElementById('term'));
  const url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/v1/nodes/' + encodeURIComponent(id) + '/console';
  const ws = new WebSocket(url, [SUBPROTOCOL, 'bearer.' + tok]);
  ws.binaryType = 'arraybuffer';
  const enc = new TextEncoder();
  let hello = null;
  let writer = false;

  term.onData((d) => {
    if (writer && ws.readyState === WebSocket.OPEN) ws.send(enc.encode(d));
  });
  ws.addEventListener('message', (ev) => {
    if (typeof ev.data !== 'string') {
      term.write(new Uint8Array(ev.data));
      return;
    }
    let msg;
    try { msg = JSON.parse(ev.data); } catch { return; }
    if (!hello) {
      hello = msg;
      writer = !!msg.writer;
      document.title = `Console ${msg.node_name} · Bare metal fleet`;
      titleEl.textContent = `Console of ${msg.node_name}`;
      document.body.dataset.writer = writer ? 'true' : 'false';
      term.options.disableStdin = !writer;
      status(writer ? 'You have the keyboard: what you type goes to the machine.' : 'Watching (read-only): ' + (msg.message || 'another session has the keyboard') + '.', writer ? 'writer' : 'watcher');
      term.focus();
      return;
    }
    if (msg.message) status(msg.message, 'notice');
  });
  ws.addEventListener('close', (ev) => {
    writer = false;
    term.options.disableStdin = true;
    document.body.dataset.closed = 'true';
    if (!hello) {
      // The handshake failed: the API refused (not an admin, an unknown
      // node, a revoked token) or could not be reached.
      status('The console could not be opened (not an admin, no such node, or the node has no serial console the controller can open).', 'error');
      return;
    }
    status('Closed' + (ev.reason ? ': ' + ev.reason : '') + '.', 'closed');
  });
}

start();
