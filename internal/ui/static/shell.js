// What every view shares: the status line, the confirmation dialog and
// the live refresh.
import { replace } from './dom.js';

const statusEl = document.getElementById('status');

export function say(msg, kind = 'info') {
  statusEl.className = 'status ' + kind;
  replace(statusEl, msg);
  if (kind !== 'error') {
    const shown = msg;
    setTimeout(() => { if (statusEl.textContent === shown) replace(statusEl); }, 8000);
  }
}

// confirmAction asks before an action; it resolves true only when the
// user confirms. Cancel is focused first, so Enter alone does nothing
// irreversible; Escape cancels.
export function confirmAction(title, text, okLabel) {
  const dlg = document.getElementById('confirm');
  replace(document.getElementById('confirm-title'), title);
  replace(document.getElementById('confirm-text'), text);
  replace(document.getElementById('confirm-ok'), okLabel);
  dlg.returnValue = '';
  return new Promise((resolve) => {
    dlg.addEventListener('close', () => resolve(dlg.returnValue === 'ok'), { once: true });
    dlg.showModal();
    document.getElementById('confirm-cancel').focus();
  });
}

// live runs load now and again every interval while the view is shown
// and the tab visible. The next run waits for the previous one, and
// stretches when a load is slow (a big fleet), so a dashboard never piles
// up requests on the controller.
export function live(load, interval = 2000) {
  let timer = null;
  let stopped = false;
  let quick = 0; // runs left at a short interval after an action
  const run = async () => {
    timer = null;
    if (stopped) return;
    if (document.hidden) return; // resumed by visibilitychange
    const t0 = performance.now();
    try {
      await load();
      document.body.dataset.stale = '';
    } catch (e) {
      if (e.status !== 401) {
        document.body.dataset.stale = 'true';
        say('Refresh failed: ' + e.message, 'error');
      }
    }
    let next = Math.max(interval, 4 * (performance.now() - t0));
    if (quick > 0) { quick--; next = Math.min(next, 500); }
    if (!stopped) timer = setTimeout(run, next);
  };
  const onVisible = () => { if (!document.hidden && !timer && !stopped) run(); };
  document.addEventListener('visibilitychange', onVisible);
  run();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
      document.removeEventListener('visibilitychange', onVisible);
    },
    // soon refreshes now and then every half second for a few seconds:
    // after an action, its effect (a job's result) shows without waiting
    // for the regular interval.
    soon() {
      quick = 10;
      if (timer) { clearTimeout(timer); run(); }
    },
  };
}

