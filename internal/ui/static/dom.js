// A few DOM helpers. The page is built only with createElement and
// textContent: API data is never parsed as HTML (the CSP's Trusted Types
// would refuse it anyway).

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// replace swaps el's children.
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

const pad = (n) => String(n).padStart(2, '0');

// fmtTime shows a timestamp in the browser's time zone, to the second.
export function fmtTime(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (isNaN(d)) return iso;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

// ago is a short duration since iso ("3 min", "2 h 5 min").
export function ago(iso) {
  const s = Math.max(0, Math.round((Date.now() - new Date(iso)) / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const hr = Math.floor(m / 60);
  if (hr < 48) return `${hr} h ${m % 60} min`;
  return `${Math.floor(hr / 24)} d`;
}

// timeEl is a <time> with the full timestamp as its title.
export function timeEl(iso) {
  if (!iso) return '';
  return h('time', { datetime: iso, title: iso }, fmtTime(iso));
}

// dl builds a description list from [term, value] rows (value may be a
// node); rows with an undefined value are left out.
export function dl(rows, attrs) {
  return h('dl', attrs, rows.filter((r) => r && r[1] !== undefined).map(([k, v]) => [h('dt', null, k), h('dd', null, v === '' ? '—' : v)]));
}

// table builds a table; rows are arrays of cells (text or nodes).
export function table(caption, headers, rows, attrs) {
  return h('table', attrs,
    caption ? h('caption', null, caption) : null,
    h('thead', null, h('tr', null, headers.map((x) => h('th', { scope: 'col' }, x)))),
    h('tbody', null, rows.map((r) => h('tr', r.attrs || null, r.cells.map((c) => h('td', null, c))))));
}
