// Eddy's web UI: a single page app over the JSON of /api/ (shapes in
// ../api.go). Everything from the cluster is put in the page as text
// (textContent, attributes): never parsed as HTML.

const STATES = ['ready', 'failed', 'reconciling', 'stalled', 'suspended', 'unknown'];
const SEVERITY = ['failed', 'stalled', 'reconciling', 'unknown', 'suspended', 'ready'];
const SOURCE_KINDS = new Set(['GitRepository', 'OCIRepository', 'HelmRepository', 'Bucket', 'HelmChart', 'ExternalArtifact']);
const TREE_KINDS = new Set(['Kustomization', 'HelmRelease']);

// ---------- DOM helpers ----------

// h builds an element. attrs: class, testid (data-testid), data (dataset),
// text, on<Event> handlers, other keys as attributes. Children: nodes or
// strings (text nodes); null/false skipped; arrays flattened.
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';
function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(el, attrs) {
  if (!attrs) return;
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.setAttribute('class', v);
    else if (k === 'testid') el.setAttribute('data-testid', v);
    else if (k === 'data') for (const [dk, dv] of Object.entries(v)) { if (dv !== undefined && dv !== null) el.dataset[dk] = dv; }
    else if (k === 'text') el.textContent = v;
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
}

// put replaces el's children (same child rules as h).
function put(el, ...children) {
  el.replaceChildren();
  append(el, children);
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// ---------- formatting ----------

const idOf = (r) => `${r.kind}/${r.namespace || ''}/${r.name}`;
const objectHref = (r) => `/object/${encodeURIComponent(r.kind)}/${encodeURIComponent(r.namespace || '_')}/${encodeURIComponent(r.name)}`;
function yamlHref(r) {
  const q = new URLSearchParams();
  if (r.apiVersion) q.set('apiVersion', r.apiVersion);
  q.set('kind', r.kind);
  if (r.namespace) q.set('namespace', r.namespace);
  q.set('name', r.name);
  return '/yaml?' + q;
}

// shortRev keeps a revision's ref and the first 8 hex digits of its hash:
// "main@sha1:0123456789ab…" → "main@sha1:01234567".
function shortRev(rev) {
  if (!rev) return '';
  const m = /^(.*?)(sha1|sha256|sha384|sha512|blake3):([0-9a-f]{9,})$/.exec(rev);
  return m ? `${m[1]}${m[2]}:${m[3].slice(0, 8)}` : rev;
}
const shortDigest = shortRev;

function humanSize(n) {
  if (n === undefined || n === null) return '';
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let v = n, i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return i === 0 ? `${n} B` : `${v.toFixed(1)} ${units[i]}`;
}

function ago(t) {
  if (!t) return '';
  const sec = Math.round((Date.now() - new Date(t).getTime()) / 1000);
  if (Number.isNaN(sec)) return '';
  const a = Math.abs(sec), suffix = sec < 0 ? ' from now' : ' ago';
  if (a < 60) return `${a}s${suffix}`;
  if (a < 3600) return `${Math.floor(a / 60)}m${suffix}`;
  if (a < 86400) return `${Math.floor(a / 3600)}h${suffix}`;
  return `${Math.floor(a / 86400)}d${suffix}`;
}

// when renders a time relative, with the absolute time in the title.
function when(t) {
  if (!t) return h('span', { class: 'muted' }, '—');
  const d = new Date(t);
  if (Number.isNaN(d.getTime())) return h('span', null, String(t));
  return h('time', { datetime: d.toISOString(), title: d.toLocaleString() }, ago(t));
}

function duration(sec) {
  if (sec === undefined || sec === null) return '';
  if (sec < 1) return `${Math.round(sec * 1000)}ms`;
  if (sec < 60) return `${sec.toFixed(1)}s`;
  if (sec < 3600) return `${Math.floor(sec / 60)}m${Math.floor(sec % 60)}s`;
  return `${Math.floor(sec / 3600)}h${Math.floor((sec % 3600) / 60)}m`;
}

const badge = (state, text) => h('span', { class: `badge st-${state || 'unknown'}` }, text ?? state ?? 'unknown');
const healthBadge = (health) => h('span', { class: `badge hl-${(health || 'Unknown').toLowerCase()}` }, health || 'Unknown');

// Conditions whose True is abnormal (Flux's "negative polarity"), with the
// state their True means.
const ABNORMAL_TRUE = {
  Reconciling: 'reconciling', Stalled: 'stalled', Drifted: 'stalled', ArtifactOutdated: 'reconciling',
  FetchFailed: 'failed', BuildFailed: 'failed', StorageOperationFailed: 'failed', IncludeUnavailable: 'failed',
  MutableTag: 'stalled', // an ImagePolicy's warning: it selected a tag that moves
};

function conditionState(c) {
  if (c.status !== 'True' && c.status !== 'False') return 'unknown';
  if (c.type in ABNORMAL_TRUE) return c.status === 'True' ? ABNORMAL_TRUE[c.type] : 'unknown';
  return c.status === 'True' ? 'ready' : 'failed';
}

function statusClass(status) {
  const st = (status || '').toLowerCase();
  if (/(succeed|success|deployed|applied|true|ready)/.test(st)) return 'ready';
  if (/(fail|error|false)/.test(st)) return 'failed';
  if (/(progress|pending|reconcil)/.test(st)) return 'reconciling';
  return 'unknown';
}

// ---------- API ----------

class APIError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

async function api(path, init) {
  let res;
  try {
    res = await fetch(path, { credentials: 'same-origin', ...init });
  } catch (e) {
    throw new APIError(0, `cannot reach the Eddy UI server (${e.message})`);
  }
  if (!res.ok) {
    let msg = `${res.status} ${res.statusText}`;
    try { const j = await res.json(); if (j && j.error) msg = j.error; } catch { /* not JSON */ }
    throw new APIError(res.status, msg);
  }
  return res.json();
}

function errorBox(err) {
  const notFound = err && err.status === 404;
  const msg = err && err.message ? err.message : String(err);
  let text = `Error: ${msg}`;
  if (notFound) text = /not readable/.test(msg) ? msg.charAt(0).toUpperCase() + msg.slice(1) : `Not found or not readable with your permissions (${msg})`;
  return h('p', { class: 'error', role: 'alert', testid: 'error' }, text);
}

// ---------- session, header, theme ----------

let session = { readOnly: true };
const sessionReady = api('/api/session').then((got) => { session = got; renderSession(); return got; }, (e) => {
  const el = document.querySelector('[data-testid=session]');
  if (el) put(el, h('span', { class: 'error' }, `session: ${e.message}`));
  return session;
});

function renderSession() {
  const el = document.querySelector('[data-testid=session]');
  if (!el) return;
  put(el,
    h('span', { class: 'ctx', title: session.server || '' }, session.context || session.server || ''),
    session.user ? h('span', { class: 'user', title: 'acting as' }, session.user) : null,
    session.readOnly ? h('span', { class: 'badge st-unknown' }, 'read-only') : null,
  );
}

function applyTheme(theme) {
  if (theme) document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
}

function currentTheme() {
  return document.documentElement.dataset.theme ||
    (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light');
}

function initTheme() {
  let saved = null;
  try { saved = localStorage.getItem('eddy-theme'); } catch { /* storage off */ }
  applyTheme(saved === 'dark' || saved === 'light' ? saved : null);
  document.querySelector('.theme')?.addEventListener('click', () => {
    const next = currentTheme() === 'dark' ? 'light' : 'dark';
    applyTheme(next);
    try { localStorage.setItem('eddy-theme', next); } catch { /* storage off */ }
  });
}

// ---------- connection banner ----------

const conn = { stream: true, cluster: true, message: '' };
function updateBanner() {
  const b = document.querySelector('[data-testid=banner]');
  if (!b) return;
  const ok = conn.stream && conn.cluster;
  b.hidden = ok;
  if (!ok) {
    // The server's message is a full sentence (it may say to restart, not
    // that it is reconnecting), so it is shown alone, as sent.
    b.textContent = !conn.stream
      ? 'Lost the connection to the Eddy UI server — reconnecting…'
      : conn.message || 'The cluster is not reachable — reconnecting…';
  }
}

function openStream() {
  const es = new EventSource('/api/stream');
  es.addEventListener('open', () => {
    // Back after a break: what changed meanwhile was not told, so refetch.
    if (!conn.stream) scheduleRefresh();
    conn.stream = true;
    updateBanner();
  });
  es.addEventListener('error', () => { conn.stream = false; updateBanner(); });
  es.addEventListener('status', (e) => {
    try {
      const st = JSON.parse(e.data);
      const was = conn.cluster;
      conn.cluster = !!st.connected;
      conn.message = st.message || '';
      updateBanner();
      if (st.connected && !was) scheduleRefresh(); // the cluster is back
    } catch { /* ignore bad event */ }
  });
  es.addEventListener('change', () => scheduleRefresh());
}

// scheduleRefresh refetches the current page's data 200 ms after the first
// change it is told of (a burst of changes costs one refetch; a steady
// stream one every 200 ms at most, never none); refetches do not overlap.
let refreshTimer = 0, refreshing = false, refreshAgain = false;
function scheduleRefresh() {
  if (refreshTimer) return;
  refreshTimer = setTimeout(runRefresh, 200);
}
async function runRefresh() {
  refreshTimer = 0;
  if (refreshing) { refreshAgain = true; return; }
  refreshing = true;
  try {
    if (current) await current.update(true);
  } finally {
    refreshing = false;
    if (refreshAgain) { refreshAgain = false; scheduleRefresh(); }
  }
}

// ---------- keeping view state across refreshes ----------

// swap replaces container's children with nodes, keeping the open state of
// <details data-key>, horizontal scroll of .scroll[data-key] and the
// window's scroll position.
function swap(container, nodes) {
  if (!document.getElementById('main').contains(container)) return; // page left meanwhile
  const open = new Map(), scroll = new Map();
  for (const d of container.querySelectorAll('details[data-key]')) open.set(d.dataset.key, d.open);
  for (const e of container.querySelectorAll('.scroll[data-key]')) scroll.set(e.dataset.key, [e.scrollLeft, e.scrollTop]);
  const x = window.scrollX, y = window.scrollY;
  const frag = document.createDocumentFragment();
  append(frag, [nodes]);
  for (const d of frag.querySelectorAll('details[data-key]')) if (open.has(d.dataset.key)) d.open = open.get(d.dataset.key);
  container.replaceChildren(frag);
  for (const e of container.querySelectorAll('.scroll[data-key]')) {
    const p = scroll.get(e.dataset.key);
    if (p) { e.scrollLeft = p[0]; e.scrollTop = p[1]; }
  }
  window.scrollTo(x, y);
}

// ---------- shared renderers ----------

// table: a scrollable table; each cell carries its column's name
// (data-label) so that a phone-width screen shows rows as cards.
function table(testid, head, rows, empty, key, cls) {
  const labels = head.map((c) => (typeof c === 'string' ? c : c.dataset.label || c.textContent));
  for (const tr of rows) [...tr.children].forEach((td, i) => { if (labels[i]) td.dataset.label = labels[i]; });
  return h('div', { class: 'scroll', data: { key: key || testid } },
    h('table', { testid, class: cls ? `cards ${cls}` : 'cards' },
      h('thead', null, h('tr', null, head.map((c) => h('th', null, c)))),
      h('tbody', null, rows.length ? rows : h('tr', { class: 'empty' }, h('td', { colspan: head.length, class: 'muted' }, empty)))));
}

const loading = () => h('p', { class: 'muted loading' }, 'Loading…');

function section(title, ...body) {
  return h('section', { class: 'panel' }, h('h2', null, title), body);
}

function refLink(r) {
  return h('a', { href: objectHref(r) }, `${r.kind}/${r.namespace ? r.namespace + '/' : ''}${r.name}`);
}

function driftRows(list, withOwner) {
  const rows = [];
  for (const d of list || []) {
    const fields = d.fields && d.fields.length ? d.fields : [{ path: '', old: '', new: '', manager: '' }];
    for (const f of fields) {
      rows.push(h('tr', { data: { object: idOf(d.object) } },
        h('td', null, h('a', { href: yamlHref(d.object) }, `${d.object.kind}/${d.object.namespace ? d.object.namespace + '/' : ''}${d.object.name}`)),
        withOwner ? h('td', null, refLink(d.owner)) : null,
        h('td', { testid: 'drift-path', class: 'mono' }, f.path || d.message || ''),
        h('td', { testid: 'drift-old', class: 'mono val' }, f.old),
        h('td', { testid: 'drift-new', class: 'mono val' }, f.new),
        h('td', { testid: 'drift-manager' }, f.manager || ''),
        h('td', { testid: 'drift-time' }, when(d.time)),
        h('td', { class: 'reason' }, d.reason || ''),
        // The server counts from 1, so every row shows how often it was seen.
        h('td', { class: 'num', testid: 'drift-count' }, d.count ? String(d.count) : ''),
      ));
    }
  }
  const head = ['Object', withOwner ? 'Owner' : null, 'Field', 'Desired (old)', 'Live (new)', 'Manager', 'When', 'Event', 'Count'].filter((x) => x !== null);
  return table('drift', head, rows, 'No drift recorded.');
}

// ---------- image automation chain ----------

// imageCard is one object of an image automation chain: its kind, a link,
// its state, what it says (details: [label, value, testid]), and each of
// its conditions with its message. self marks the page's own object.
function imageCard(node, details, self) {
  const sm = node.summary || {};
  return h('div', { class: `icard${self ? ' self' : ''}`, testid: 'image-node', data: { object: idOf(sm), state: sm.state || 'unknown' } },
    h('div', { class: 'ihead' }, h('span', { class: 'muted small' }, sm.kind), ' ',
      h('a', { href: objectHref(sm) }, `${sm.namespace ? sm.namespace + '/' : ''}${sm.name}`), ' ', badge(sm.state)),
    details.length ? h('dl', { class: 'kv' }, details.filter((x) => x && x[1]).map(([k, v, testid]) =>
      [h('dt', null, k), h('dd', { class: 'mono', testid }, v)])) : null,
    (node.conditions || []).map((c) => h('div', { class: 'icond', testid: 'image-condition', data: { condition: c.type } },
      badge(conditionState(c), `${c.type}=${c.status}`), ' ', h('span', { class: 'reason' }, c.reason || ''),
      c.message ? h('span', { class: 'msg-wrap' }, ` ${c.message}`) : null)));
}

const imageRefText = (r) => (r ? `${r.tag}${r.digest ? '@' + r.digest : ''}` : '');

// imagePolicyRow: the repository a policy scans → the policy.
function imagePolicyRow(p, selfID) {
  const repo = p.repository
    ? imageCard(p.repository, [['Image', p.repository.image, 'image-name'], ['Last scan', p.repository.lastScan ? when(p.repository.lastScan) : 'never', 'last-scan'],
      ['Tags', String(p.repository.tagCount ?? 0), 'tag-count']], idOf(p.repository.summary) === selfID)
    : h('div', { class: 'icard muted', testid: 'image-node', data: { object: idOf(p.repositoryRef) } }, refLink(p.repositoryRef), ' is not readable or does not exist.');
  return h('div', { class: 'irow', testid: 'image-policy', data: { policy: idOf(p.summary) } }, repo, h('span', { class: 'iarrow', 'aria-hidden': 'true' }, '→'),
    imageCard(p, [['Latest', imageRefText(p.latestRef), 'latest-ref'], ['Image', p.latestRef ? p.latestRef.name : '', null],
      p.observedRef && imageRefText(p.observedRef) !== imageRefText(p.latestRef) ? ['Written', imageRefText(p.observedRef), 'observed-ref'] : null],
    idOf(p.summary) === selfID));
}

// imagePanel shows the chain ImageRepository → ImagePolicy →
// ImageUpdateAutomation (with its GitRepository) → the commit it pushed.
function imagePanel(chain, selfID) {
  const autos = (chain.automations || []).map((a) => h('div', { class: 'ichain', testid: 'image-chain', data: { automation: idOf(a.summary) } },
    h('div', { class: 'ipolicies' }, a.policies.length ? a.policies.map((p) => imagePolicyRow(p, selfID))
      : h('p', { class: 'muted' }, 'The automation reads no policy (none in its namespace matches its policy selector).'),
      a.otherPolicies ? h('p', { class: 'muted small', testid: 'other-policies' }, `and ${a.otherPolicies} more ${a.otherPolicies === 1 ? 'policy' : 'policies'} (listed on the automation's page)`) : null),
    h('span', { class: 'iarrow', 'aria-hidden': 'true' }, '→'),
    h('div', { class: 'iauto' },
      a.source ? imageCard(a.source, [], false)
        : h('div', { class: 'icard muted', testid: 'image-node', data: { object: idOf(a.sourceRef) } }, refLink(a.sourceRef), ' is not readable or does not exist.'),
      imageCard(a, [['Push branch', a.pushBranch, 'push-branch'], ['Last run', a.lastRun ? when(a.lastRun) : 'never', 'last-run'],
        ['Signing key', a.signingKeySecret ? `Secret ${a.signingKeySecret}` : '', 'signing-key']], idOf(a.summary) === selfID)),
    h('span', { class: 'iarrow', 'aria-hidden': 'true' }, '→'),
    h('div', { class: 'icard', testid: 'image-push' }, h('div', { class: 'ihead' }, h('span', { class: 'muted small' }, 'Last push')),
      a.lastPushCommit
        ? h('dl', { class: 'kv' }, h('dt', null, 'Commit'), h('dd', { class: 'mono', testid: 'push-commit', title: a.lastPushCommit }, a.lastPushCommit),
          h('dt', null, 'Pushed'), h('dd', { testid: 'push-time' }, when(a.lastPushTime)),
          a.observedSourceRevision ? [h('dt', null, 'Source at'), h('dd', { class: 'mono' }, shortRev(a.observedSourceRevision))] : null)
        : h('p', { class: 'muted', testid: 'push-commit' }, 'Nothing pushed yet.'))));
  const lone = (chain.policies || []).map((p) => h('div', { class: 'ichain' }, h('div', { class: 'ipolicies' }, imagePolicyRow(p, selfID)),
    h('p', { class: 'muted' }, 'No ImageUpdateAutomation reads this policy.')));
  return section('Image automation', h('div', { testid: 'image-automation' },
    autos.length || lone.length ? [autos, lone] : h('p', { class: 'muted' }, 'No ImagePolicy scans this repository.')));
}

// ---------- pages ----------

// Each page is built once into main and returns {update(refresh)}: update
// fetches the page's data and re-renders its data parts; refresh is true
// when a stream change asked for it (errors then keep the last good view).

function pageOverview(main) {
  document.title = 'Eddy · Overview';
  const q = new URLSearchParams(location.search);
  const f = { kind: q.get('kind') || '', namespace: q.get('namespace') || '', state: q.get('state') || '', q: q.get('q') || '' };
  const counts = h('div', { class: 'counts', testid: 'counts' });
  const selKind = h('select', { testid: 'filter-kind', 'aria-label': 'Kind' });
  const selNs = h('select', { testid: 'filter-namespace', 'aria-label': 'Namespace' });
  const selState = h('select', { testid: 'filter-state', 'aria-label': 'State' });
  const text = h('input', { type: 'search', testid: 'filter-text', placeholder: 'Filter: name, message, revision…', 'aria-label': 'Filter text' });
  text.value = f.q;
  const note = h('div', { class: 'note' });
  const appsBox = h('div', { class: 'apps-section' });
  const body = h('div', null, loading());
  put(main, h('h1', null, 'Overview'), counts,
    h('div', { class: 'filters' }, selKind, selNs, selState, text), note, appsBox, body);

  let data = null, dataSig = '';
  // Sorting is the page's own (not in the URL, which holds the filters).
  let sort = { key: 'kind', dir: 1 };
  const COLUMNS = [
    ['Kind', 'kind', (o) => o.kind],
    ['Namespace', 'namespace', (o) => o.namespace || ''],
    ['Name', 'name', (o) => o.name],
    // By severity: failed and stalled first.
    ['State', 'state', (o) => { const i = SEVERITY.indexOf(o.state); return i < 0 ? 3 : i; }],
    ['Revision', 'revision', (o) => o.revision || ''],
    ['Message', 'message', (o) => o.message || ''],
    ['Ready changed', 'updated', (o) => o.updated || ''],
  ];

  function fill(sel, label, values, value) {
    const vs = [...new Set(values.filter(Boolean))].sort();
    if (value && !vs.includes(value)) vs.push(value);
    // Rebuilt only when the choices change: an open dropdown stays open.
    const sig = JSON.stringify(vs);
    if (sel.dataset.sig !== sig) {
      put(sel, h('option', { value: '' }, `All ${label}`), vs.map((v) => h('option', { value: v }, v)));
      sel.dataset.sig = sig;
    }
    sel.value = value;
  }

  function syncURL() {
    const p = new URLSearchParams();
    for (const k of ['kind', 'namespace', 'state', 'q']) if (f[k]) p.set(k, f[k]);
    const url = location.pathname + (p.toString() ? '?' + p : '');
    if (url !== location.pathname + location.search) history.replaceState(null, '', url);
  }

  function matches(o, anyState) {
    if (f.kind && o.kind !== f.kind) return false;
    if (f.namespace && o.namespace !== f.namespace) return false;
    if (!anyState && f.state && o.state !== f.state) return false;
    if (f.q) {
      const hay = [o.kind, o.namespace, o.name, o.message, o.revision, o.reason].join(' ').toLowerCase();
      if (!f.q.toLowerCase().split(/\s+/).filter(Boolean).every((w) => hay.includes(w))) return false;
    }
    return true;
  }

  function render() {
    if (!data) return;
    const objs = data.objects || [];
    // Counts follow the kind/namespace/text filters, not the state one,
    // so each count says what clicking it shows.
    const n = Object.fromEntries(STATES.map((st) => [st, 0]));
    for (const o of objs) if (matches(o, true)) n[o.state in n ? o.state : 'unknown']++;
    put(counts, STATES.map((st) => {
      const p = new URLSearchParams(location.search);
      if (f.state === st) p.delete('state'); else p.set('state', st);
      return h('a', { class: `count st-${st}${f.state === st ? ' active' : ''}`, href: '/' + (p.toString() ? '?' + p : ''), title: f.state === st ? 'Show all states' : `Show only ${st}` },
        h('span', { class: 'n', testid: `count-${st}` }, String(n[st])), h('span', { class: 'label' }, st));
    }));
    const apps = data.apps || [];
    fill(selKind, 'kinds', [...objs.map((o) => o.kind), ...apps.map((a) => a.kind)], f.kind);
    fill(selNs, 'namespaces', [...objs.map((o) => o.namespace), ...apps.map((a) => a.namespace)], f.namespace);
    renderApps(apps);
    fill(selState, 'states', STATES, f.state);
    const byName = (a, b) => a.kind.localeCompare(b.kind) || (a.namespace || '').localeCompare(b.namespace || '') || a.name.localeCompare(b.name);
    const key = COLUMNS.find((c) => c[1] === sort.key)[2];
    const shown = objs.filter(matches).sort((a, b) => {
      const ka = key(a), kb = key(b);
      return sort.dir * (ka < kb ? -1 : ka > kb ? 1 : 0) || byName(a, b);
    });
    const head = COLUMNS.map(([label, k]) => h('button', {
      type: 'button', class: 'sort' + (sort.key === k ? ' on' : ''), title: `Sort by ${label.toLowerCase()}`, data: { label },
      'aria-sort': sort.key === k ? (sort.dir > 0 ? 'ascending' : 'descending') : null,
      onclick: () => { sort = { key: k, dir: sort.key === k ? -sort.dir : 1 }; render(); },
    }, label, sort.key === k ? (sort.dir > 0 ? ' ▲' : ' ▼') : ''));
    const rows = shown.map((o) => h('tr', { data: { object: idOf(o) } },
      h('td', { class: 'kind' }, o.kind),
      h('td', null, o.namespace || ''),
      h('td', { class: 'name' }, h('a', { href: objectHref(o) }, o.name)),
      h('td', { testid: 'state' }, badge(o.state)),
      h('td', { class: 'mono', title: o.revision || '' }, shortRev(o.revision)),
      h('td', { class: 'msg' }, h('div', { class: 'trunc', title: o.message || '' }, o.message || '')),
      h('td', { class: 'age' }, when(o.updated)),
    ));
    put(note,
      data.hidden && data.hidden.length ? h('p', { class: 'muted' }, `Not listed (not installed in this cluster, or your permissions do not allow listing): ${data.hidden.join(', ')}. If you may read them in some namespaces only, start eddy ui with -n NAMESPACE.`) : null,
      h('p', { class: 'muted small' }, `${shown.length} of ${objs.length} objects`));
    swap(body, f.kind === 'Application' ? [] : table('objects', head, rows,
      objs.length ? 'No object matches the filters.' : 'No Flux objects found.'));
  }

  // renderApps shows the Argo CD Applications apart from the Flux objects:
  // they have sync and health statuses, not Flux's states, so the counts
  // leave them out and a state filter hides them.
  function renderApps(apps) {
    const shown = apps.filter((a) => {
      if (f.state || (f.kind && f.kind !== 'Application')) return false;
      if (f.namespace && a.namespace !== f.namespace) return false;
      if (!f.q) return true;
      const hay = [a.kind, a.namespace, a.name, a.project, a.repoURL, a.path, a.sync, a.health, a.destNamespace].join(' ').toLowerCase();
      return f.q.toLowerCase().split(/\s+/).filter(Boolean).every((w) => hay.includes(w));
    });
    if (!shown.length) { swap(appsBox, []); return; }
    swap(appsBox, section(`Applications (${shown.length})`, appsTable(shown)));
  }

  const onFilter = () => {
    f.kind = selKind.value; f.namespace = selNs.value; f.state = selState.value; f.q = text.value.trim();
    syncURL();
    render();
  };
  selKind.addEventListener('change', onFilter);
  selNs.addEventListener('change', onFilter);
  selState.addEventListener('change', onFilter);
  text.addEventListener('input', onFilter);

  return {
    async update(refresh) {
      try {
        const next = await api('/api/objects');
        if (typeof next.connected === 'boolean' && next.connected !== conn.cluster) { conn.cluster = next.connected; updateBanner(); }
        // Changes that leave every row as it was (an annotation, a status
        // written again with the same values) cost no re-render: building
        // 1,000 rows keeps the page busy for a few hundred ms.
        const sig = JSON.stringify([next.objects, next.apps, next.hidden]);
        if (refresh && data && sig === dataSig) return;
        data = next;
        dataSig = sig;
        render();
      } catch (e) {
        if (!refresh || !data) swap(body, errorBox(e));
      }
    },
  };
}

function pageObject(main, kind, namespace, name) {
  const ref = { kind, namespace: namespace === '_' ? '' : namespace, name };
  const id = idOf(ref);
  document.title = `Eddy · ${kind} ${ref.namespace}/${name}`;
  const head = h('div', { class: 'obj-head' });
  const result = h('span', { class: 'action-result', testid: 'action-result', 'aria-live': 'polite' });
  const buttons = h('span', { class: 'buttons' });
  const actions = h('div', { class: 'actions' }, buttons, result);
  const body = h('div', null, loading());
  put(main, head, actions, body);
  let detail = null;
  let busy = false;
  renderHead();

  async function act(verb) {
    if (busy) return;
    busy = true;
    for (const b of buttons.querySelectorAll('button')) b.disabled = true;
    result.className = 'action-result';
    result.textContent = 'Sending…';
    try {
      const sess = await sessionReady;
      const payload = { kind: ref.kind, namespace: ref.namespace, name: ref.name };
      if (detail && detail.summary.apiVersion) payload.apiVersion = detail.summary.apiVersion;
      if (verb === 'reconcile' && TREE_KINDS.has(ref.kind)) payload.withSource = true;
      const r = await api(`/api/action/${verb}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': sess.csrfToken || '' },
        body: JSON.stringify(payload),
      });
      result.classList.add('ok');
      result.textContent = r.message || `${verb}: done`;
    } catch (e) {
      result.classList.add('err');
      result.textContent = `${verb} failed: ${e.message}`;
    } finally {
      busy = false;
      renderButtons();
      scheduleRefresh();
    }
  }

  function renderButtons() {
    if (session.readOnly || !detail) { put(buttons); return; }
    // canPatch absent (an older server) means allowed: the action's own
    // answer then tells a denial.
    if (detail.canPatch === false) {
      put(buttons, h('span', { class: 'muted', testid: 'no-patch' }, 'your permissions do not allow changing this object'));
      return;
    }
    const suspended = detail.summary.suspended;
    put(buttons,
      h('button', { type: 'button', testid: 'action-reconcile', disabled: busy, onclick: () => act('reconcile'),
        title: TREE_KINDS.has(ref.kind) ? 'Reconcile, with its source first' : 'Reconcile now' },
        TREE_KINDS.has(ref.kind) ? 'Reconcile with source' : 'Reconcile'),
      suspended
        ? h('button', { type: 'button', testid: 'action-resume', disabled: busy, onclick: () => act('resume') }, 'Resume')
        : h('button', { type: 'button', testid: 'action-suspend', disabled: busy, onclick: () => act('suspend') }, 'Suspend'),
    );
  }

  function renderHead() {
    const sm = detail ? detail.summary : ref;
    put(head,
      h('p', { class: 'crumbs' }, h('a', { href: '/?kind=' + encodeURIComponent(ref.kind) }, ref.kind), ' / ',
        h('a', { href: '/?namespace=' + encodeURIComponent(ref.namespace) }, ref.namespace || '(cluster)')),
      h('h1', null, h('span', { class: 'muted' }, `${ref.kind} `), ref.name,
        detail ? [' ', h('span', { testid: 'object-state' }, badge(sm.state))] : null,
        detail && sm.suspended && sm.state !== 'suspended' ? [' ', badge('suspended')] : null),
      detail ? h('p', { class: 'links' },
        h('a', { href: yamlHref({ ...ref, apiVersion: sm.apiVersion }), testid: 'link-yaml' }, 'YAML'),
        ref.kind === 'Kustomization' ? h('a', { href: `/diff/${encodeURIComponent(ref.namespace)}/${encodeURIComponent(ref.name)}`, testid: 'link-diff' }, 'Diff (desired vs live)') : null,
        h('a', { href: '/graph#' + encodeURIComponent(id) }, 'Graph'),
      ) : null,
      detail && sm.message ? h('p', { class: 'msg-full' }, sm.message) : null,
    );
  }

  function conditionsPanel(d) {
    const rows = (d.conditions || []).map((c) => h('tr', { data: { condition: c.type } },
      h('td', { class: 'name' }, c.type),
      h('td', null, badge(conditionState(c), c.status)),
      h('td', { class: 'reason' }, c.reason || ''),
      h('td', { class: 'msg-wrap' }, c.message || ''),
      h('td', null, when(c.lastTransitionTime)),
    ));
    return section('Conditions', table('conditions', ['Type', 'Status', 'Reason', 'Message', 'Changed'], rows, 'No conditions reported yet.'));
  }

  function revisionsPanel(d) {
    let applied = d.lastAppliedRevision || '', appliedNote = null;
    if (!applied && ref.kind === 'HelmRelease') {
      // A HelmRelease records no lastAppliedRevision: its newest deployed
      // release (status.history) is what is applied.
      const deployed = (d.history || []).find((sn) => sn.status === 'deployed');
      if (deployed) { applied = deployed.revision; appliedNote = 'the chart version of the deployed release (status.history)'; }
    }
    const differ = applied !== (d.lastAttemptedRevision || '');
    return section('Revisions', h('dl', { class: `kv revisions${differ ? ' differ' : ''}` },
      h('dt', null, 'Last applied'), h('dd', { class: 'mono', testid: 'revision-applied', title: appliedNote }, applied),
      h('dt', null, 'Last attempted'), h('dd', { class: 'mono', testid: 'revision-attempted' }, d.lastAttemptedRevision || ''),
      differ ? h('dd', { class: 'warn' }, applied
        ? 'The last attempted revision differs from the last applied one.'
        : 'No revision applied yet.') : null));
  }

  function artifactDL(a, testid) {
    return h('dl', { class: 'kv', testid },
      h('dt', null, 'Revision'), h('dd', { class: 'mono', testid: 'artifact-revision' }, a.revision || ''),
      h('dt', null, 'Digest'), h('dd', { class: 'mono', testid: 'artifact-digest', title: a.digest || '' }, a.digest || ''),
      h('dt', null, 'Size'), h('dd', { testid: 'artifact-size', title: `${a.size} bytes` }, a.size ? `${humanSize(a.size)} (${a.size} bytes)` : ''),
      h('dt', null, 'URL'), h('dd', { class: 'mono url', testid: 'artifact-url' }, a.url || ''),
      a.lastUpdateTime ? [h('dt', null, 'Updated'), h('dd', null, when(a.lastUpdateTime))] : null);
  }

  function sourcePanel(d) {
    const out = [];
    if (d.artifact) out.push(section('Artifact', artifactDL(d.artifact, 'artifact')));
    const src = d.source || (d.summary.sourceRef ? { ...d.summary.sourceRef } : null);
    if (src) {
      out.push(section('Source',
        h('p', null, refLink({ ...src, namespace: src.namespace || ref.namespace }), ' ', src.state ? badge(src.state) : null),
        src.message ? h('p', { class: 'muted msg-wrap' }, src.message) : null,
        d.sourceArtifact ? artifactDL(d.sourceArtifact, d.artifact ? 'source-artifact' : 'artifact')
          : h('p', { class: 'muted' }, d.source ? 'The source has no artifact yet.' : 'The source is not readable or does not exist.')));
    }
    return out;
  }

  function historyPanel(d) {
    const hist = [...(d.history || [])].sort((a, b) =>
      new Date(b.lastReconciled || 0) - new Date(a.lastReconciled || 0));
    const rows = hist.map((sn) => h('tr', { data: { revision: sn.revision }, class: `tl-${statusClass(sn.status)}`,
      title: Object.entries(sn.metadata || {}).map(([k, v]) => `${k}: ${v}`).join('\n') || null },
      h('td', { class: 'mono', title: sn.revision }, shortRev(sn.revision)),
      h('td', { class: 'mono', title: sn.digest || '' }, shortDigest(sn.digest)),
      h('td', null, when(sn.firstReconciled)),
      h('td', null, when(sn.lastReconciled)),
      h('td', { class: 'num' }, duration(sn.durationSeconds)),
      h('td', null, badge(statusClass(sn.status), sn.status || 'unknown')),
      h('td', { class: 'num' }, String(sn.totalReconciliations ?? '')),
    ));
    return section('History', table('history', ['Revision', 'Digest', 'First reconciled', 'Last reconciled', 'Duration', 'Status', 'Total'], rows, 'No history yet.', 'history', 'timeline'));
  }

  function treeNode(n, depth) {
    const nid = idOf(n);
    const nested = depth > 0 && TREE_KINDS.has(n.kind);
    const label = h('span', { class: 'node' },
      healthBadge(n.health), ' ',
      h('span', { class: 'muted' }, n.kind), ' ',
      h('a', { href: yamlHref(n), title: 'Live YAML' }, `${n.namespace ? n.namespace + '/' : ''}${n.name}`),
      nested ? [' ', h('a', { href: objectHref(n), class: 'small' }, 'open')] : null,
      n.message ? h('span', { class: 'muted small node-msg', title: n.message }, ` ${n.message}`) : null);
    const li = h('li', { data: { object: nid, health: n.health || 'Unknown' } });
    if (n.children && n.children.length) {
      li.append(h('details', { open: true, data: { key: 'tree:' + nid } },
        h('summary', null, label, h('span', { class: 'muted small' }, ` (${n.children.length})`)),
        h('ul', null, n.children.map((c) => treeNode(c, depth + 1)))));
    } else {
      li.append(label);
    }
    return li;
  }

  function treePanel(tree) {
    if (tree === undefined) return section('Resource tree', h('p', { class: 'muted' }, 'Loading…'));
    if (tree instanceof Error) return section('Resource tree', h('div', { testid: 'tree' }, errorBox(tree)));
    return section('Resource tree', h('div', { class: 'scroll', data: { key: 'tree' } },
      h('ul', { class: 'tree', testid: 'tree' }, treeNode(tree, 0))));
  }

  function driftPanel(drift) {
    if (drift instanceof Error) return section('Drift', h('div', { testid: 'drift' }, errorBox(drift)));
    return section('Drift', driftRows(drift.drift, false));
  }

  function eventsPanel(d) {
    const rows = (d.events || []).map((e) => h('tr', { data: { reason: e.reason }, class: e.type === 'Warning' ? 'warning' : null },
      h('td', null, h('span', { class: `badge ${e.type === 'Warning' ? 'st-failed' : 'st-info'}` }, e.type || '')),
      h('td', { class: 'reason' }, e.reason || ''),
      h('td', null, e.source ? h('span', { class: 'badge st-info', title: idOf(e.object) }, 'source') : null,
        e.source ? ' ' : null, e.source ? refLink(e.object) : null),
      h('td', { class: 'msg-wrap' }, e.message || ''),
      h('td', null, when(e.time)),
      h('td', { class: 'num' }, e.count > 1 ? `×${e.count}` : ''),
    ));
    return section('Events', table('events', ['Type', 'Reason', 'From', 'Message', 'Time', 'Count'], rows, 'No events (Kubernetes keeps them for one hour by default).'));
  }

  function annotationsPanel(d) {
    const entries = Object.entries(d.annotations || {}).sort(([a], [b]) => a.localeCompare(b));
    return section('Annotations', entries.length
      ? h('dl', { class: 'kv', testid: 'annotations' }, entries.map(([k, v]) => [h('dt', { class: 'mono' }, k), h('dd', { class: 'mono msg-wrap' }, v)]))
      : h('p', { class: 'muted', testid: 'annotations' }, 'No annotations.'));
  }

  function specPanel(d) {
    if (!d.spec) return null;
    return h('details', { class: 'panel', data: { key: 'spec' } }, h('summary', null, 'Spec'),
      h('pre', { class: 'yaml' }, JSON.stringify(d.spec, null, 2)));
  }

  let lastTree; // undefined until the first tree arrives
  const self = {
    async update(refresh) {
      const base = `${encodeURIComponent(ref.kind)}/${encodeURIComponent(ref.namespace)}/${encodeURIComponent(ref.name)}`;
      const hasTree = TREE_KINDS.has(ref.kind);
      const soft = (p) => p.catch((e) => e);
      // The tree is read live (one GET per object), the rest from the
      // server's cache: the page shows the rest first, the last tree until
      // the new one arrives.
      const treeP = hasTree ? soft(api(`/api/tree/${base}`)) : null;
      const [d, drift] = await Promise.all([
        soft(api(`/api/object/${base}`)),
        hasTree ? soft(api(`/api/drift?owner=${encodeURIComponent(id)}`)) : null,
      ]);
      if (current !== self) return;
      if (d instanceof Error) {
        // A refresh keeps the last view through a passing error, not
        // through a 404: the object was deleted (or is no longer readable).
        if (!refresh || !detail || d.status === 404) { detail = null; renderHead(); renderButtons(); swap(body, errorBox(d)); }
        return;
      }
      detail = d;
      await sessionReady;
      renderHead();
      if (!busy) renderButtons();
      const showRevs = hasTree || d.lastAppliedRevision || d.lastAttemptedRevision;
      const render = () => swap(body, [
        conditionsPanel(d),
        h('div', { class: 'cols' },
          showRevs ? revisionsPanel(d) : null,
          sourcePanel(d)),
        d.image ? imagePanel(d.image, id) : null,
        hasTree ? historyPanel(d) : (d.history && d.history.length ? historyPanel(d) : null),
        hasTree ? treePanel(lastTree) : null,
        hasTree ? driftPanel(drift) : null,
        eventsPanel(d),
        annotationsPanel(d),
        specPanel(d),
      ]);
      render();
      if (!treeP) return;
      const tree = await treeP;
      if (current !== self || detail !== d) return; // a newer update shows its own
      lastTree = tree;
      render();
    },
  };
  return self;
}

function pageDrift(main) {
  document.title = 'Eddy · Drift';
  const body = h('div', null, loading());
  put(main, h('h1', null, 'Drift'),
    h('p', { class: 'muted' }, 'Fields another manager changed on applied objects, newest first: put back by kustomize-controller (DriftCorrected events) or found by helm-controller (DriftDetected).'),
    body);
  let ok = false;
  return {
    async update(refresh) {
      try {
        const d = await api('/api/drift');
        ok = true;
        swap(body, driftRows(d.drift, true));
      } catch (e) {
        if (!refresh || !ok) swap(body, errorBox(e));
      }
    },
  };
}

function pageYAML(main) {
  const q = new URLSearchParams(location.search);
  const ref = { apiVersion: q.get('apiVersion') || '', kind: q.get('kind') || '', namespace: q.get('namespace') || '', name: q.get('name') || '' };
  document.title = `Eddy · YAML ${ref.kind} ${ref.namespace}/${ref.name}`;
  const body = h('div', null, loading());
  const flux = ref.apiVersion && /\.toolkit\.fluxcd\.io\//.test(ref.apiVersion);
  put(main,
    h('h1', null, h('span', { class: 'muted' }, `${ref.kind} `), ref.name),
    h('p', { class: 'muted' }, [ref.apiVersion, ref.namespace ? `namespace ${ref.namespace}` : ''].filter(Boolean).join(' · '),
      flux ? [' · ', h('a', { href: objectHref(ref) }, 'object page')] : null),
    body);
  let ok = false;
  return {
    async update(refresh) {
      try {
        const p = new URLSearchParams();
        for (const k of ['apiVersion', 'kind', 'namespace', 'name']) if (ref[k]) p.set(k, ref[k]);
        const y = await api('/api/yaml?' + p);
        ok = true;
        swap(body, [
          h('div', { class: 'scroll', data: { key: 'yaml' } }, h('pre', { class: 'yaml', testid: 'yaml' }, y.yaml || '')),
          y.managedFields ? h('details', { testid: 'managed-fields', class: 'panel', data: { key: 'managed-fields' } },
            h('summary', null, 'managedFields'), h('pre', { class: 'yaml' }, y.managedFields)) : null,
        ]);
      } catch (e) {
        if (!refresh || !ok || e.status === 404) swap(body, errorBox(e)); // 404: deleted
      }
    },
  };
}

function pageDiff(main, namespace, name) {
  const ref = { kind: 'Kustomization', namespace, name };
  document.title = `Eddy · Diff ${namespace}/${name}`;
  const info = h('p', { class: 'muted' }, 'Building the desired state and dry-running it on the server…');
  const body = h('div', null, loading());
  put(main, h('h1', null, h('span', { class: 'muted' }, 'Diff '), refLink(ref)), info, body);
  let ok = false;
  const order = { created: 0, configured: 1, deleted: 2, skipped: 3, unchanged: 4 };
  return {
    async update(refresh) {
      try {
        const d = await api(`/api/diff/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`);
        ok = true;
        const objs = [...(d.objects || [])].sort((a, b) => (order[a.action] ?? 9) - (order[b.action] ?? 9) ||
          idOf(a.object).localeCompare(idOf(b.object)));
        const changed = objs.filter((o) => o.action !== 'unchanged' && o.action !== 'skipped').length;
        info.textContent = `Desired state at ${d.revision || '(unknown revision)'} against the live cluster: ${changed} of ${objs.length} objects would change.`;
        const act = { created: 'ready', configured: 'reconciling', deleted: 'failed', skipped: 'suspended', unchanged: 'unknown' };
        const rows = objs.map((o) => h('tr', { data: { object: idOf(o.object), action: o.action } },
          h('td', null, badge(act[o.action] || 'unknown', o.action)),
          h('td', null, h('a', { href: yamlHref(o.object) }, `${o.object.kind}/${o.object.namespace ? o.object.namespace + '/' : ''}${o.object.name}`)),
          h('td', null, o.fields && o.fields.length
            ? h('ul', { class: 'fields' }, o.fields.map((f) => h('li', { data: { path: f.path } },
              h('span', { class: 'mono path' }, f.path), ': ',
              h('span', { class: 'mono old' }, f.old === '' ? '(absent)' : f.old), ' → ',
              h('span', { class: 'mono new' }, f.new === '' ? '(absent)' : f.new))))
            : h('span', { class: 'muted' }, o.action === 'unchanged' ? '' : '—')),
        ));
        swap(body, table('diff', ['Action', 'Object', 'Fields (live → desired)'], rows, 'The Kustomization has no objects.'));
      } catch (e) {
        if (!refresh || !ok || e.status === 404) { info.textContent = ''; swap(body, errorBox(e)); } // 404: deleted
      }
    },
  };
}

// ---------- Argo CD Applications ----------

const appHref = (a) => `/app/${encodeURIComponent(a.namespace)}/${encodeURIComponent(a.name)}`;
const resourceId = (r) => `${r.kind}/${r.namespace || ''}/${r.name}`;

// argoBadge shows a sync, health or operation status in Argo CD's colours.
function argoBadge(value, testid) {
  const v = value || 'Unknown';
  return h('span', { class: `badge argo argo-${v.toLowerCase()}`, testid, data: { status: v } }, v);
}

function appsTable(apps) {
  const rows = apps.map((a) => h('tr', { data: { app: `${a.namespace}/${a.name}` } },
    h('td', { class: 'name' }, h('a', { href: appHref(a) }, a.name)),
    h('td', null, a.namespace),
    h('td', null, a.project),
    h('td', null, argoBadge(a.sync, 'sync-status')),
    h('td', { title: a.healthMessage || null }, argoBadge(a.health, 'health-status')),
    h('td', null, a.syncPolicy),
    h('td', { class: 'mono msg-wrap' }, a.repoURL, a.path ? h('span', { class: 'muted' }, ` ${a.path}`) : null),
    h('td', { class: 'mono', title: a.revision || '' }, a.targetRevision || 'HEAD', a.revision ? h('span', { class: 'muted' }, ` (${a.revision.slice(0, 7)})`) : null),
    h('td', null, `${a.destServer}${a.destNamespace ? ' · ' + a.destNamespace : ''}`),
    h('td', null, a.conditions === '<none>' ? '' : a.conditions),
  ));
  return table('apps', ['Name', 'Namespace', 'Project', 'Sync status', 'Health status', 'Sync policy', 'Repository', 'Target', 'Destination', 'Conditions'],
    rows, 'No Applications.', 'apps');
}

function pageApp(main, namespace, name) {
  const ref = { kind: 'Application', namespace, name };
  document.title = `Eddy · Application ${namespace}/${name}`;
  const head = h('div', { class: 'obj-head' });
  const result = h('span', { class: 'action-result', testid: 'action-result', 'aria-live': 'polite' });
  const buttons = h('span', { class: 'buttons' });
  const prune = h('input', { type: 'checkbox', testid: 'sync-prune' });
  const dryRun = h('input', { type: 'checkbox', testid: 'sync-dry-run' });
  const actions = h('div', { class: 'actions' }, buttons, result);
  const body = h('div', null, loading());
  put(main, head, actions, body);
  let detail = null, busy = false;
  renderHead();

  async function sync() {
    if (busy) return;
    busy = true;
    renderButtons();
    result.className = 'action-result';
    result.textContent = 'Sending…';
    try {
      const sess = await sessionReady;
      const r = await api(`/api/app/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}/sync`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': sess.csrfToken || '' },
        body: JSON.stringify({ prune: prune.checked, dryRun: dryRun.checked }),
      });
      result.classList.add('ok');
      result.textContent = r.message || 'sync requested';
    } catch (e) {
      result.classList.add('err');
      result.textContent = `sync failed: ${e.message}`;
    } finally {
      busy = false;
      renderButtons();
      scheduleRefresh();
    }
  }

  // The Sync button shows only to a user who may patch the Application
  // (canSync, from a SelfSubjectAccessReview); disabled while an operation
  // is in progress, which Argo CD refuses to replace.
  function renderButtons() {
    if (session.readOnly || !detail) { put(buttons); return; }
    if (!detail.canSync) {
      put(buttons, h('span', { class: 'muted', testid: 'no-patch' }, 'your permissions do not allow syncing this Application'));
      return;
    }
    const operating = detail.summary.operating;
    put(buttons,
      h('button', { type: 'button', testid: 'action-sync', disabled: busy || operating, onclick: sync,
        title: operating ? 'An operation is in progress' : 'Sync to the target revision, as eddy app sync' }, 'Sync'),
      h('label', { class: 'sync-opts' }, prune, 'Prune'),
      h('label', { class: 'sync-opts' }, dryRun, 'Dry run'));
  }

  function renderHead() {
    const sm = detail ? detail.summary : ref;
    put(head,
      h('p', { class: 'crumbs' }, h('a', { href: '/?kind=Application' }, 'Application'), ' / ',
        h('a', { href: '/?namespace=' + encodeURIComponent(namespace) }, namespace)),
      h('h1', null, h('span', { class: 'muted' }, 'Application '), name,
        detail ? [' ', argoBadge(sm.sync, 'app-sync'), ' ', argoBadge(sm.health, 'app-health')] : null),
      detail ? h('p', { class: 'links' },
        h('a', { href: yamlHref({ ...ref, apiVersion: sm.apiVersion }), testid: 'link-yaml' }, 'YAML')) : null,
      detail && sm.healthMessage ? h('p', { class: 'msg-full' }, sm.healthMessage) : null,
    );
  }

  function summaryPanel(d) {
    const sm = d.summary;
    const kv = (label, value, testid) => [h('dt', null, label), h('dd', { testid, class: 'msg-wrap' }, value || '')];
    return section('Summary', h('dl', { class: 'kv', testid: 'app-summary' },
      kv('Project', sm.project, 'app-project'),
      (d.sources || []).map((src, i) => [
        kv(d.sources.length > 1 ? `Source ${i + 1}` : 'Repository', src.repoURL, 'app-repo'),
        src.path ? kv('Path', src.path, 'app-path') : null,
        src.chart ? kv('Chart', src.chart) : null,
        kv('Target', src.targetRevision || 'HEAD', 'app-target'),
        src.ref ? kv('Ref', src.ref) : null]),
      kv('Destination', `${sm.destServer}${sm.destNamespace ? ' · namespace ' + sm.destNamespace : ''}`, 'app-destination'),
      kv('Sync policy', sm.syncPolicy + (d.selfHeal ? ' (self-heal)' : ''), 'app-sync-policy'),
      d.syncOptions && d.syncOptions.length ? kv('Sync options', d.syncOptions.join(', ')) : null,
      kv('Sync status', d.syncStatus, 'app-sync-status'),
      kv('Revision', sm.revision, 'app-revision')));
  }

  function operationPanel(d) {
    const op = d.operation;
    if (!op && !d.summary.operating) return null;
    if (!op) return section('Operation', h('p', { testid: 'app-operation' }, argoBadge('Running'), ' requested; waiting for the controller'));
    return section('Operation', h('dl', { class: 'kv', testid: 'app-operation' },
      h('dt', null, 'Phase'), h('dd', { testid: 'operation-phase' }, argoBadge(op.phase)),
      op.message ? [h('dt', null, 'Message'), h('dd', { class: 'msg-wrap' }, op.message)] : null,
      op.revision ? [h('dt', null, 'Revision'), h('dd', { class: 'mono' }, op.revision)] : null,
      op.initiatedBy ? [h('dt', null, 'Initiated by'), h('dd', null, op.initiatedBy)] : null,
      h('dt', null, 'Started'), h('dd', null, when(op.startedAt)),
      h('dt', null, 'Finished'), h('dd', null, when(op.finishedAt))));
  }

  function conditionsPanel(d) {
    const rows = (d.conditions || []).map((c) => h('tr', { data: { condition: c.type }, class: /Error$/.test(c.type) ? 'warning' : null },
      h('td', { class: 'name' }, c.type),
      h('td', { class: 'msg-wrap' }, c.message || ''),
      h('td', null, when(c.lastTransitionTime))));
    return section('Conditions', table('conditions', ['Condition', 'Message', 'Changed'], rows, 'No conditions.'));
  }

  function resourcesPanel(d) {
    const rows = (d.resources || []).map((r) => h('tr', { data: { resource: resourceId(r) } },
      h('td', null, r.group || ''),
      h('td', null, r.kind),
      h('td', null, r.namespace || ''),
      h('td', { class: 'name' }, r.name),
      h('td', { testid: 'resource-status' }, r.status ? argoBadge(r.status) : ''),
      h('td', { testid: 'resource-health' }, r.health ? argoBadge(r.health) : ''),
      h('td', null, r.hook || ''),
      h('td', { class: 'msg-wrap' }, r.message || '')));
    return section('Resources', table('app-resources', ['Group', 'Kind', 'Namespace', 'Name', 'Status', 'Health', 'Hook', 'Message'], rows, 'No resources yet.'));
  }

  function diffPanel(d) {
    const rows = [];
    for (const o of d.diff || []) {
      const fields = o.fields && o.fields.length ? o.fields : [null];
      for (const f of fields) {
        rows.push(h('tr', { data: { object: resourceId(o), path: f ? f.path : '' } },
          h('td', null, `${o.group ? o.group + '/' : ''}${o.kind} ${o.namespace ? o.namespace + '/' : ''}${o.name}`),
          h('td', { class: 'mono', testid: 'diff-path' }, f ? f.path : h('span', { class: 'muted' }, 'out of sync; no field differences published')),
          h('td', { class: 'mono val', testid: 'diff-live' }, f ? (f.live === '' ? '(absent)' : f.live) : ''),
          h('td', { class: 'mono val', testid: 'diff-desired' }, f ? (f.desired === '' ? '(absent)' : f.desired) : ''),
          h('td', { testid: 'diff-manager' }, f ? f.manager || '' : '')));
      }
    }
    return section('Pending diff',
      d.diffError ? h('p', { class: 'error' }, d.diffError) : null,
      table('app-diff', ['Object', 'Field', 'Live', 'Desired (Git)', 'Changed by'], rows, 'No pending changes.'));
  }

  function historyPanel(d) {
    const rows = (d.history || []).map((e) => h('tr', { data: { historyId: String(e.id) } },
      h('td', { class: 'num' }, String(e.id)),
      h('td', null, when(e.deployedAt)),
      h('td', { class: 'mono msg-wrap' }, e.repoURL || ''),
      h('td', { class: 'mono', testid: 'history-revision' }, e.revision || ''),
      h('td', null, e.initiatedBy || '')));
    return section('History', table('app-history', ['ID', 'Deployed', 'Source', 'Revision', 'Initiated by'], rows, 'No deployments yet.'));
  }

  function eventsPanel(d) {
    const rows = (d.events || []).map((e) => h('tr', { data: { reason: e.reason }, class: e.type === 'Warning' ? 'warning' : null },
      h('td', null, h('span', { class: `badge ${e.type === 'Warning' ? 'st-failed' : 'st-info'}` }, e.type || '')),
      h('td', { class: 'reason' }, e.reason || ''),
      h('td', { class: 'msg-wrap' }, e.message || ''),
      h('td', null, when(e.time)),
      h('td', { class: 'num' }, e.count > 1 ? `×${e.count}` : '')));
    return section('Events', table('events', ['Type', 'Reason', 'Message', 'Time', 'Count'], rows, 'No events (Kubernetes keeps them for one hour by default).'));
  }

  const self = {
    async update(refresh) {
      let d;
      try {
        d = await api(`/api/app/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`);
      } catch (e) {
        if (current !== self) return;
        if (!refresh || !detail || e.status === 404) { detail = null; renderHead(); renderButtons(); swap(body, errorBox(e)); }
        return;
      }
      if (current !== self) return;
      detail = d;
      await sessionReady;
      renderHead();
      if (!busy) renderButtons();
      swap(body, [
        h('div', { class: 'cols' }, summaryPanel(d), operationPanel(d)),
        conditionsPanel(d),
        resourcesPanel(d),
        diffPanel(d),
        historyPanel(d),
        eventsPanel(d),
      ]);
    },
  };
  return self;
}

// ---------- graph ----------

function pageGraph(main) {
  document.title = 'Eddy · Graph';
  const body = h('div', null, loading());
  put(main, h('h1', null, 'Dependency graph'),
    h('p', { class: 'muted legend' }, 'Sources on the left, then what uses them, by depth. Edges: ',
      h('span', { class: 'edge-key source' }, '── source'), ' · ', h('span', { class: 'edge-key depends' }, '- - dependsOn'), ' · ',
      h('span', { class: 'edge-key applies' }, '··· applies (inventory)')),
    body);
  let ok = false;
  return {
    async update(refresh) {
      try {
        const g = await api('/api/graph');
        ok = true;
        swap(body, h('div', { class: 'scroll graph-wrap', data: { key: 'graph' } }, drawGraph(g)));
        const target = decode(location.hash.slice(1));
        if (target && !refresh) {
          const el = [...body.querySelectorAll('g[data-node]')].find((e) => e.dataset.node === target);
          if (el) { el.classList.add('focus'); el.scrollIntoView({ block: 'center', inline: 'center' }); }
        }
      } catch (e) {
        if (!refresh || !ok) swap(body, errorBox(e));
      }
    },
  };
}

// layout places nodes in columns (a small Sugiyama layout): the longest
// path from a node without incoming edges (sources first); an edge that
// spans several columns gets a waypoint in each column between, so that it
// runs in its own lane and not through the boxes; then each column is
// ordered by the mean row of its neighbours (a few sweeps), which keeps
// edges short and mostly uncrossed for Flux-sized graphs.
function layout(g) {
  const nodes = new Map(g.nodes.map((n) => [n.id, { ...n, layer: 0, row: 0, in: [], out: [] }]));
  const edges = g.edges.filter((e) => nodes.has(e.from) && nodes.has(e.to) && e.from !== e.to).map((e) => ({ ...e, via: [] }));
  for (const e of edges) { nodes.get(e.from).out.push(e.to); nodes.get(e.to).in.push(e.from); }
  const memo = new Map();
  const depth = (id, seen) => {
    if (memo.has(id)) return memo.get(id);
    if (seen.has(id)) return 0; // a cycle: break it here
    seen.add(id);
    const n = nodes.get(id);
    let d = SOURCE_KINDS.has(n.kind) && n.kind !== 'HelmChart' ? 0 : (n.in.length ? 0 : 1);
    for (const p of n.in) d = Math.max(d, depth(p, seen) + 1);
    seen.delete(id);
    memo.set(id, d);
    return d;
  };
  for (const n of nodes.values()) n.layer = depth(n.id, new Set());
  // Objects that take part in no edge (alerts, providers…) go in a last column.
  const lone = [...nodes.values()].filter((n) => !n.in.length && !n.out.length && !SOURCE_KINDS.has(n.kind));
  const maxLayer = Math.max(0, ...[...nodes.values()].filter((n) => !lone.includes(n)).map((n) => n.layer));
  for (const n of lone) n.layer = maxLayer + 1;
  // Waypoints ("~" ids cannot clash with Kind/ns/name ids).
  let k = 0;
  for (const e of edges) {
    const a = nodes.get(e.from), b = nodes.get(e.to);
    if (b.layer - a.layer < 2) continue;
    let prev = a;
    for (let l = a.layer + 1; l < b.layer; l++) {
      const w = { id: `~${k++}`, waypoint: true, kind: '', layer: l, row: 0, in: [prev.id], out: [] };
      nodes.set(w.id, w);
      if (prev === a) a.out[a.out.indexOf(b.id)] = w.id; else prev.out.push(w.id);
      e.via.push(w.id);
      prev = w;
    }
    prev.out.push(b.id);
    b.in[b.in.indexOf(a.id)] = prev.id;
  }
  const layers = [];
  for (const n of nodes.values()) (layers[n.layer] ||= []).push(n);
  for (const l of layers) if (l) l.sort((a, b) => a.kind.localeCompare(b.kind) || a.id.localeCompare(b.id)).forEach((n, i) => { n.row = i; });
  const mean = (ids) => ids.length ? ids.reduce((sum, id) => sum + nodes.get(id).row, 0) / ids.length : null;
  for (let sweep = 0; sweep < 6; sweep++) {
    const seq = sweep % 2 ? [...layers].reverse() : layers;
    for (const l of seq) {
      if (!l) continue;
      for (const n of l) n.key = mean(sweep % 2 ? n.out : n.in) ?? n.row;
      l.sort((a, b) => a.key - b.key).forEach((n, i) => { n.row = i; });
    }
  }
  return { nodes, edges, layers: layers.map((l) => l || []) };
}

function drawGraph(g) {
  if (!g.nodes || !g.nodes.length) return h('p', { class: 'muted', testid: 'graph-empty' }, 'No Flux objects to draw.');
  const { nodes, edges, layers } = layout(g);
  const W = 230, H = 44, WH = 10, GX = 90, GY = 18, PAD = 16;
  const size = (n) => (n.waypoint ? WH : H);
  const colHeight = (l) => l.reduce((sum, n) => sum + size(n) + GY, 0) - GY;
  const height = PAD * 2 + Math.max(...layers.map(colHeight));
  for (const [li, l] of layers.entries()) {
    let y = PAD + (height - PAD * 2 - colHeight(l)) / 2;
    for (const n of l) { n.x = PAD + li * (W + GX); n.y = y; y += size(n) + GY; }
  }
  const width = PAD * 2 + layers.length * (W + GX) - GX;
  const svg = s('svg', { testid: 'graph', class: 'graph', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': 'Dependency graph' },
    s('defs', null,
      s('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
        s('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrow' }))));
  const curve = (x1, y1, x2, y2) => {
    const dx = x2 <= x1 ? 60 : Math.max(30, (x2 - x1) / 2);
    return ` C${x1 + dx},${y1} ${x2 - dx},${y2} ${x2},${y2}`;
  };
  for (const e of edges) {
    const a = nodes.get(e.from), b = nodes.get(e.to);
    let x = a.x + W, y = a.y + H / 2;
    let d = `M${x},${y}`;
    for (const id of e.via) {
      const w = nodes.get(id), wy = w.y + WH / 2;
      d += curve(x, y, w.x, wy) + ` L${w.x + W},${wy}`;
      x = w.x + W; y = wy;
    }
    d += curve(x, y, b.x, b.y + H / 2);
    const cls = { dependsOn: 'depends', applies: 'applies' }[e.type] || 'source';
    svg.append(s('path', { d, class: `edge ${cls}`, 'marker-end': 'url(#arrow)', data: { from: e.from, to: e.to } },
      s('title', null, `${e.from} → ${e.to} (${e.type})`)));
  }
  for (const n of nodes.values()) {
    if (n.waypoint) continue;
    const label = n.name.length > 26 ? n.name.slice(0, 25) + '…' : n.name;
    svg.append(s('g', { data: { node: n.id, state: n.state || 'unknown' }, class: `node st-${n.state || 'unknown'}`, transform: `translate(${n.x},${n.y})` },
      s('a', { href: objectHref(n) },
        s('title', null, `${n.id} — ${n.state || 'unknown'}`),
        s('rect', { width: W, height: H, rx: 6, class: 'box' }),
        s('rect', { width: 6, height: H, rx: 3, class: 'bar' }),
        s('text', { x: 14, y: 17, class: 'kind' }, `${n.kind} · ${n.namespace || ''}`),
        s('text', { x: 14, y: 34, class: 'label' }, label))));
  }
  return svg;
}

// ---------- router ----------

// decode is decodeURIComponent, null for a malformed escape (a hand-typed
// URL) instead of an exception.
function decode(str) {
  try { return decodeURIComponent(str); } catch { return null; }
}

// current is the page on screen ({update(refresh)}).
let current = null;

function route() {
  let parts;
  try {
    parts = location.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    parts = ['?']; // a malformed %-escape: no such page
  }
  const main = document.getElementById('main');
  let nav = '', page;
  clearTimeout(refreshTimer);
  refreshTimer = 0;
  if (parts.length === 0) { nav = 'overview'; page = pageOverview(main); }
  else if (parts[0] === 'object' && parts.length === 4 && parts[1] === 'Application') page = pageApp(main, parts[2], parts[3]);
  else if (parts[0] === 'object' && parts.length === 4) page = pageObject(main, parts[1], parts[2], parts[3]);
  else if (parts[0] === 'app' && parts.length === 3) page = pageApp(main, parts[1], parts[2]);
  else if (parts[0] === 'drift' && parts.length === 1) { nav = 'drift'; page = pageDrift(main); }
  else if (parts[0] === 'graph' && parts.length === 1) { nav = 'graph'; page = pageGraph(main); }
  else if (parts[0] === 'yaml' && parts.length === 1) page = pageYAML(main);
  else if (parts[0] === 'diff' && parts.length === 3) page = pageDiff(main, parts[1], parts[2]);
  else {
    document.title = 'Eddy · Not found';
    put(main, h('h1', null, 'No such page'), h('p', null, h('a', { href: '/' }, 'Back to the overview')));
    page = { update() {} };
  }
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (a.dataset.nav === nav) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  current = page;
  page.update(false);
}

document.addEventListener('click', (e) => {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = e.target.closest && e.target.closest('a');
  if (!a || a.getAttribute('target') || a.hasAttribute('download')) return;
  const href = a.getAttribute('href');
  if (!href || !href.startsWith('/') || href.startsWith('//') || href.startsWith('/api/')) return;
  e.preventDefault();
  const url = new URL(href, location.href);
  if (url.pathname + url.search + url.hash === location.pathname + location.search + location.hash) return;
  history.pushState(null, '', url.pathname + url.search + url.hash);
  window.scrollTo(0, 0);
  route();
});
window.addEventListener('popstate', route);

// Relative times ("3m ago") move on without a refetch.
setInterval(() => {
  for (const t of document.querySelectorAll('time[datetime]')) t.textContent = ago(t.getAttribute('datetime'));
}, 15000);

initTheme();
route();
openStream();
