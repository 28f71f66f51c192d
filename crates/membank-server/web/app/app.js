// membank's web app: one hand-written module, no framework, no build step. It speaks only
// the public REST API (the same one scripts use), with the key the person typed kept in
// this tab's session storage. The DOM is built with createElement and textContent only:
// memory text is user content, so nothing from the API ever reaches innerHTML. Inline
// scripts and style attributes are refused by the page's Content-Security-Policy; styles
// set from here go through the CSSOM (`el.style.x`), which the policy allows.
//
// Pages are hash routes (`#/memories`, `#/memory/<id>`, `#/chat`, `#/summaries`, `#/next`,
// `#/overview`), so the server only ever serves `/`. A route may carry `?user=<id>` to open
// another user of the tenant.

'use strict';

// ---------------------------------------------------------------------------------------
// Small DOM helpers

const PROPERTIES = new Set(['value', 'checked', 'disabled', 'hidden', 'selected', 'open', 'tabIndex', 'required', 'multiple']);

/** Text as shown: C0 and C1 controls (but line feed and tab), DEL and the bidirectional
 * embeddings, overrides and isolates written out as `\u{…}`, as the CLI writes them, so a
 * stored text can neither hide characters nor reorder what is shown around it. Form
 * fields keep the exact text. */
function visible(text) {
  return String(text).replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u{${c.codePointAt(0).toString(16)}}`);
}

/** `h('p', {class: 'x', testid: 'y', onclick: f}, 'text', child)`: an element, safely. */
function h(tag, props, ...children) {
  const el = document.createElement(tag);
  let value;
  for (const [key, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (key === 'class') el.className = v;
    else if (key === 'text') el.textContent = visible(v);
    else if (key === 'testid') el.dataset.testid = v;
    else if (key === 'value') value = v;
    else if (key.startsWith('on') && typeof v === 'function') el.addEventListener(key.slice(2), v);
    else if (PROPERTIES.has(key)) el[key] = v;
    else el.setAttribute(key, v === true ? '' : String(v));
  }
  append(el, ...children);
  // A select's value can only be set once its options exist.
  if (value !== undefined) el.value = value;
  return el;
}

function append(el, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : visible(child));
  }
  return el;
}

/** Replaces an element's children (skipping null and false, unlike replaceChildren). */
function fill(el, ...children) {
  el.replaceChildren();
  return append(el, ...children);
}

const $ = (selector, root = document) => root.querySelector(selector);
const enc = encodeURIComponent;

// ---------------------------------------------------------------------------------------
// State

const KEY_STORAGE = 'membank.key';
const USER_STORAGE = 'membank.user';

const state = {
  /** The API key, or null (loopback no-auth server, or signed out). */
  key: null,
  signedIn: false,
  /** `GET /v1/about`. */
  about: null,
  /** `[{user, time_zone, created_at}]` of the tenant (only the bound user for a user key). */
  users: [],
  /** The user the pages show. */
  user: null,
  /** Memory browser filters, kept while the tab lives. */
  filters: { kind: '', status: 'active', from: '', to: '', pinned: false },
  /** The chat transcript per user, for this tab only. */
  chats: new Map(),
  /** Charts of the current page, destroyed when it changes. */
  charts: [],
};

function fademem() {
  return state.about?.forgetting?.policy === 'fademem';
}

function userTimeZone() {
  return state.users.find((u) => u.user === state.user)?.time_zone || 'UTC';
}

// ---------------------------------------------------------------------------------------
// The API client

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function userPath(rest = '') {
  if (!state.user) throw new ApiError(0, 'no_user', 'Pick a user first.');
  return `/v1/users/${enc(state.user)}${rest}`;
}

async function errorFrom(response) {
  let code = `http_${response.status}`;
  let message = `The server answered ${response.status} ${response.statusText}`.trim();
  try {
    const body = await response.json();
    if (body && body.error && typeof body.error.message === 'string') {
      code = String(body.error.code || code);
      message = body.error.message;
    }
  } catch {
    // Not JSON: keep the status line.
  }
  return new ApiError(response.status, code, message);
}

/** One API call. Resolves to the parsed JSON (or the Response with `raw`); rejects with ApiError. */
async function api(method, path, { body, query, signal, raw, key = state.key } = {}) {
  let url = path;
  if (query) {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) {
      if (v !== undefined && v !== null && v !== '' && v !== false) params.set(k, String(v));
    }
    const qs = params.toString();
    if (qs) url += `?${qs}`;
  }
  const headers = { Accept: raw ? 'text/event-stream, application/json' : 'application/json' };
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let response;
  try {
    response = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal, cache: 'no-store' });
  } catch (err) {
    if (err && err.name === 'AbortError') throw err;
    throw new ApiError(0, 'network', `Could not reach the membank server (${err && err.message ? err.message : 'network error'}). Is it running?`);
  }
  if (!response.ok) throw await errorFrom(response);
  if (raw) return response;
  const text = await response.text();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(response.status, 'bad_response', 'The server sent something that is not JSON.');
  }
}

const isAbort = (err) => err && err.name === 'AbortError';

// ---------------------------------------------------------------------------------------
// Messages: errors in a role="alert" region, confirmations in a polite status line

function showError(err, context) {
  if (isAbort(err)) return;
  const alert = $('#alert');
  const code = err instanceof ApiError ? err.code : 'error';
  const message = err && err.message ? err.message : String(err);
  fill(alert, 
    h('p', { class: 'alert-text' },
      h('strong', { text: context ? `${context}: ` : 'Error: ' }),
      h('span', { testid: 'alert-message', text: message }),
      ' ',
      h('code', { class: 'alert-code', testid: 'alert-code', text: code })),
    h('button', { type: 'button', class: 'button small ghost', testid: 'alert-dismiss', onclick: clearError }, 'Dismiss'),
  );
  alert.hidden = false;
  console.warn('membank:', code, message);
}

function clearError() {
  const alert = $('#alert');
  alert.hidden = true;
  fill(alert);
}

let statusTimer = null;
function announce(text) {
  const status = $('#status');
  status.textContent = visible(text);
  clearTimeout(statusTimer);
  statusTimer = setTimeout(() => { status.textContent = ''; }, 8000);
}

// ---------------------------------------------------------------------------------------
// Formatting

function fmt(n, digits = 3) {
  return typeof n === 'number' && Number.isFinite(n) ? n.toFixed(digits) : '—';
}

function safeFormat(options, date) {
  try {
    return new Intl.DateTimeFormat(undefined, { ...options, timeZone: userTimeZone() }).format(date);
  } catch {
    return new Intl.DateTimeFormat(undefined, { ...options, timeZone: 'UTC' }).format(date);
  }
}

function fmtDateTime(iso) {
  if (!iso) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return safeFormat({ dateStyle: 'medium', timeStyle: 'short' }, date);
}

function fmtTime(iso) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '';
  return safeFormat({ timeStyle: 'short' }, date);
}

/** A local day `YYYY-MM-DD` (already in the user's zone) as words. */
function fmtDay(day) {
  const date = new Date(`${day}T12:00:00Z`);
  if (Number.isNaN(date.getTime())) return day;
  return new Intl.DateTimeFormat(undefined, { weekday: 'long', year: 'numeric', month: 'long', day: 'numeric', timeZone: 'UTC' }).format(date);
}

function timeEl(iso, text) {
  return h('time', { datetime: iso, title: iso }, text ?? fmtDateTime(iso));
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function shortId(id) {
  return String(id).slice(0, 8);
}

function memoryLink(id, label) {
  return h('a', { href: `#/memory/${enc(id)}`, class: 'memory-link', testid: 'memory-link', 'data-id': id, title: id }, label ?? `memory ${shortId(id)}`);
}

const KINDS = ['turn', 'note', 'daily_summary', 'daily_portrait', 'global_summary', 'global_portrait', 'fused'];
const STATUSES = ['active', 'archived', 'superseded', 'erased'];
const KIND_LABEL = {
  turn: 'turn', note: 'note', daily_summary: 'day summary', daily_portrait: 'day portrait',
  global_summary: 'global summary', global_portrait: 'global portrait', fused: 'fused',
};

function snippet(memory, max = 120) {
  const text = (memory.kind === 'turn' && memory.user_text) || memory.content || memory.user_text || '';
  const flat = text.replace(/\s+/g, ' ').trim();
  if (!flat) return memory.status === 'erased' ? '(erased)' : `memory ${shortId(memory.id)}`;
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

// ---------------------------------------------------------------------------------------
// Dialogs (native <dialog>: modal, traps focus, Escape cancels; focus returns to the opener)

/**
 * Opens a modal form. `fields(form)` returns the body nodes; resolves to `collect(form)`
 * on confirm, or null on cancel.
 */
function openDialog({ title, testid, body, confirmLabel, danger, collect }) {
  return new Promise((resolve) => {
    const opener = document.activeElement;
    const titleId = `dialog-title-${Math.random().toString(36).slice(2)}`;
    let result = null;
    const cancel = h('button', { type: 'button', class: 'button ghost', testid: `${testid}-cancel` }, 'Cancel');
    const confirm = h('button', { type: 'submit', class: danger ? 'button danger' : 'button primary', testid: `${testid}-confirm` }, confirmLabel);
    const form = h('form', { class: 'dialog-form', novalidate: false },
      h('h2', { id: titleId, text: title }),
      body,
      h('div', { class: 'dialog-actions' }, cancel, confirm));
    const dialog = h('dialog', { class: 'dialog', testid, 'aria-labelledby': titleId }, form);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      if (!form.reportValidity()) return;
      result = collect ? collect(form) : true;
      dialog.close();
    });
    cancel.addEventListener('click', () => dialog.close());
    dialog.addEventListener('close', () => {
      dialog.remove();
      if (opener && opener.isConnected && typeof opener.focus === 'function') opener.focus();
      resolve(result);
    });
    document.body.append(dialog);
    dialog.showModal();
    const first = form.querySelector('input, textarea, select');
    (first || cancel).focus();
  });
}

function field(label, control, hint) {
  const id = control.id || `f-${Math.random().toString(36).slice(2)}`;
  control.id = id;
  return h('div', { class: 'field' }, h('label', { for: id, text: label }), control, hint ? h('p', { class: 'hint', text: hint }) : null);
}

// ---------------------------------------------------------------------------------------
// Memory actions, shared by the browser, the memory page and "next to forget"

async function askForgetReason() {
  const reason = h('input', { type: 'text', name: 'reason', required: true, maxlength: 1024, testid: 'forget-reason', autocomplete: 'off' });
  return openDialog({
    title: 'Forget this memory?',
    testid: 'forget-dialog',
    body: [
      h('p', { text: 'It is archived: recalls stop returning it, and you can restore it later. The reason is kept in its history.' }),
      field('Reason', reason),
    ],
    confirmLabel: 'Forget',
    collect: () => reason.value.trim(),
  });
}

async function askErase(memory) {
  return openDialog({
    title: 'Erase this memory for good?',
    testid: 'erase-dialog',
    body: [
      h('p', { class: 'danger-text', text: 'This cannot be undone.' }),
      h('p', { text: 'Its text, its vector and its index entry are deleted, and so is every memory derived from it or replaced by it. Only a content-free tombstone and the event history remain.' }),
      h('blockquote', { class: 'quote', text: snippet(memory, 200) }),
    ],
    confirmLabel: 'Erase for good',
    danger: true,
  });
}

async function askEdit(memory) {
  const controls = {};
  const body = [h('p', { text: 'The edited text becomes a new memory; this version is kept, marked superseded by it.' })];
  if (memory.kind === 'turn') {
    controls.user_text = h('textarea', { name: 'user_text', rows: 3, required: true, testid: 'edit-user-text', value: memory.user_text ?? memory.content ?? '' });
    body.push(field(`What ${memory.user} said`, controls.user_text));
    if (memory.assistant_text !== undefined) {
      controls.assistant_text = h('textarea', { name: 'assistant_text', rows: 3, testid: 'edit-assistant-text', value: memory.assistant_text ?? '' });
      body.push(field('The assistant\'s reply', controls.assistant_text));
    }
  } else {
    controls.text = h('textarea', { name: 'text', rows: 5, required: true, testid: 'edit-text', value: memory.content ?? '' });
    body.push(field('Text', controls.text));
  }
  return openDialog({
    title: 'Edit this memory',
    testid: 'edit-dialog',
    body,
    confirmLabel: 'Save',
    collect: () => {
      const out = {};
      for (const [name, control] of Object.entries(controls)) {
        const value = control.value;
        const before = name === 'text' ? memory.content : memory[name];
        if (value.trim() && value !== before) out[name] = value;
      }
      return out;
    },
  });
}

/**
 * Runs one action on a memory and returns the memory as it now is, with its retention
 * (`{memory, replacedBy}`), or null when the person cancelled.
 */
async function memoryAction(memory, action) {
  const base = userPath(`/memories/${enc(memory.id)}`);
  let message;
  let replacedBy = null;
  switch (action) {
    case 'pin':
      await api('POST', `${base}/pin`);
      message = 'Pinned: it will not decay.';
      break;
    case 'unpin':
      await api('POST', `${base}/unpin`);
      message = 'Unpinned.';
      break;
    case 'forget': {
      const reason = await askForgetReason();
      if (reason === null) return null;
      await api('POST', `${base}/forget`, { query: { reason } });
      message = 'Forgotten (archived). It can be restored.';
      break;
    }
    case 'restore':
      await api('POST', `${base}/restore`);
      message = 'Restored.';
      break;
    case 'erase': {
      if (!(await askErase(memory))) return null;
      await api('DELETE', base);
      message = 'Erased for good.';
      break;
    }
    case 'edit': {
      const changes = await askEdit(memory);
      if (changes === null) return null;
      if (Object.keys(changes).length === 0) {
        announce('Nothing changed.');
        return null;
      }
      const edited = await api('PATCH', base, { body: changes });
      replacedBy = await api('GET', userPath(`/memories/${enc(edited.id)}`));
      message = 'Edited: the new version replaces this one, which is kept as superseded.';
      break;
    }
    default:
      throw new Error(`unknown action ${action}`);
  }
  const fresh = await api('GET', base);
  announce(message);
  return { memory: fresh, replacedBy };
}

const ACTION_LABEL = { pin: 'Pin', unpin: 'Unpin', forget: 'Forget…', restore: 'Restore', edit: 'Edit…', erase: 'Erase…' };

function actionsFor(memory) {
  const out = [];
  if (memory.status === 'erased') return out;
  if (memory.status === 'active' || memory.status === 'archived') out.push(memory.pinned ? 'unpin' : 'pin');
  if (memory.status === 'active') out.push('forget', 'edit');
  if (memory.status === 'archived' || memory.status === 'superseded') out.push('restore');
  out.push('erase');
  return out;
}

/** The action buttons of a memory; `onDone(result, action)` after each one succeeds. */
function actionBar(memory, onDone, { open = true } = {}) {
  const bar = h('div', { class: 'actions', role: 'group', 'aria-label': 'Actions' });
  if (open) bar.append(h('a', { class: 'button small ghost', href: `#/memory/${enc(memory.id)}`, testid: 'action-open' }, 'Details'));
  for (const action of actionsFor(memory)) {
    const button = h('button', {
      type: 'button',
      class: `button small ${action === 'erase' ? 'danger-ghost' : ''}`,
      testid: `action-${action}`,
      'aria-label': `${ACTION_LABEL[action].replace('…', '')} memory ${snippet(memory, 40)}`,
    }, ACTION_LABEL[action]);
    // Not disabled while it runs: a disabled button loses focus, and the dialog it opens
    // must give focus back to it. A second press meanwhile is ignored instead.
    let busy = false;
    button.addEventListener('click', async () => {
      if (busy) return;
      busy = true;
      clearError();
      button.setAttribute('aria-busy', 'true');
      try {
        const result = await memoryAction(memory, action);
        if (result) onDone(result, action);
      } catch (err) {
        showError(err, `Could not ${action}`);
      } finally {
        busy = false;
        button.removeAttribute('aria-busy');
      }
    });
    bar.append(button);
  }
  return bar;
}

// ---------------------------------------------------------------------------------------
// A memory as a card

function badge(text, cls, testid) {
  return h('span', { class: `badge ${cls || ''}`, testid }, text);
}

function memoryText(memory) {
  const box = h('div', { class: 'memory-text', testid: 'memory-text' });
  if (memory.status === 'erased' || (memory.content === null && memory.user_text === undefined)) {
    box.append(h('p', { class: 'muted', text: '(erased: only a content-free tombstone remains)' }));
    return box;
  }
  if (memory.kind === 'turn' && memory.user_text !== undefined) {
    box.append(h('p', {}, h('span', { class: 'who', text: memory.user }), ' ', h('span', { class: 'said', text: memory.user_text })));
    if (memory.assistant_text !== undefined) {
      box.append(h('p', {}, h('span', { class: 'who assistant', text: 'assistant' }), ' ', h('span', { class: 'said', text: memory.assistant_text })));
    }
  } else {
    box.append(h('p', { class: 'said', text: memory.content ?? '' }));
  }
  return box;
}

function metric(label, value, testid, title) {
  return h('div', { class: 'metric', title }, h('dt', { text: label }), h('dd', { testid }, value));
}

function retentionValue(retention) {
  if (typeof retention !== 'number') return '—';
  return [h('meter', { min: 0, max: 1, low: 0.2, high: 0.6, optimum: 1, value: retention, 'aria-hidden': 'true' }), ' ', fmt(retention, 3)];
}

function memoryCard(memory, { onChange, extra, withDay = false } = {}) {
  const card = h('article', {
    class: `memory status-${memory.status}${memory.pinned ? ' pinned' : ''}`,
    testid: 'memory-card',
    'data-id': memory.id,
    'data-status': memory.status,
    'data-pinned': String(memory.pinned),
    'data-kind': memory.kind,
    tabIndex: -1,
  });
  const head = h('div', { class: 'memory-head' },
    badge(KIND_LABEL[memory.kind] || memory.kind, `kind kind-${memory.kind}`, 'memory-kind'),
    badge(memory.source, 'source', 'memory-source'),
    badge(memory.status, `status status-${memory.status}`, 'memory-status'),
    memory.pinned ? badge('pinned', 'pin', 'memory-pinned') : null,
    memory.past_threshold ? badge('past threshold', 'warn', 'memory-past-threshold') : null,
    memory.reminisced ? h('span', { class: 'badge reminisced', testid: 'memory-reminisced', title: 'Found in the archive: the active memories did not answer this recall well' }, 'reminisced') : null,
    h('span', { class: 'spacer' }),
    timeEl(memory.occurred_at, withDay ? `${memory.day} ${fmtTime(memory.occurred_at)}` : fmtTime(memory.occurred_at)));
  const metrics = h('dl', { class: 'metrics' },
    metric('S', fmt(memory.strength, 2), 'memory-strength', 'Strength S: grows by one with each strengthening recall'),
    metric('R', retentionValue(memory.retention), 'memory-retention', 'Retention R now, from the server\'s forgetting policy'),
    metric('Recalls', String(memory.recall_count ?? 0), 'memory-recalls'),
    fademem() ? metric('Layer', memory.layer, 'memory-layer', 'FadeMem layer') : null,
    fademem() ? metric('Importance', fmt(memory.importance, 2), 'memory-importance', 'FadeMem importance in [0, 1]') : null);
  append(card, head, memoryText(memory), metrics, extra || null);
  if (onChange) {
    card.append(actionBar(memory, (result, action) => onChange(card, result, action)));
  }
  return card;
}

/** After an action in a list: the card is replaced in place and focus follows it. */
function replaceCard(card, result, action, makeCard) {
  const fresh = makeCard(result.memory);
  card.replaceWith(fresh);
  if (result.replacedBy) {
    fresh.before(makeCard(result.replacedBy));
  }
  const follow = { pin: 'unpin', unpin: 'pin', forget: 'restore', restore: 'forget' }[action];
  const target = (follow && fresh.querySelector(`[data-testid="action-${follow}"]`)) || fresh;
  target.focus();
}

// ---------------------------------------------------------------------------------------
// Charts (uPlot; the page never computes a retention itself)

function cssVar(name, fallback) {
  const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return value || fallback;
}

function destroyCharts() {
  for (const chart of state.charts) {
    try {
      chart.observer?.disconnect();
      chart.plot.destroy();
    } catch {
      // Already gone.
    }
  }
  state.charts = [];
}

function chartHeight() {
  return window.matchMedia('(max-width: 640px)').matches ? 230 : 320;
}

function mountChart(container, opts, data) {
  if (typeof window.uPlot !== 'function') {
    container.append(h('p', { class: 'muted', text: 'The chart library did not load.' }));
    return null;
  }
  const width = Math.max(260, container.clientWidth || 600);
  const plot = new window.uPlot({ ...opts, width, height: chartHeight() }, data, container);
  const observer = new ResizeObserver(() => {
    const w = Math.max(260, container.clientWidth);
    if (Math.abs(w - plot.width) > 2) plot.setSize({ width: w, height: chartHeight() });
  });
  observer.observe(container);
  state.charts.push({ plot, observer });
  return plot;
}

function tzDate(tz) {
  return (ts) => {
    try {
      return window.uPlot.tzDate(new Date(ts * 1e3), tz);
    } catch {
      return new Date(ts * 1e3);
    }
  };
}

/** Vertical marks drawn on the canvas after the series (recalls, now, the archive date). */
function verticalMarks(marks) {
  return {
    hooks: {
      draw: [(u) => {
        const { ctx } = u;
        const { top, height, left, width } = u.bbox;
        ctx.save();
        for (const mark of marks) {
          const x = Math.round(u.valToPos(mark.t, 'x', true));
          if (x < left - 1 || x > left + width + 1) continue;
          ctx.strokeStyle = mark.color;
          ctx.lineWidth = mark.width * devicePixelRatio;
          ctx.setLineDash((mark.dash || []).map((d) => d * devicePixelRatio));
          ctx.beginPath();
          ctx.moveTo(x, top);
          ctx.lineTo(x, top + height);
          ctx.stroke();
          if (mark.label) {
            ctx.setLineDash([]);
            ctx.fillStyle = mark.color;
            ctx.font = `${11 * devicePixelRatio}px system-ui, sans-serif`;
            ctx.textAlign = x > left + width * 0.8 ? 'right' : 'left';
            ctx.fillText(mark.label, x + (ctx.textAlign === 'right' ? -4 : 4) * devicePixelRatio, top + 12 * devicePixelRatio);
          }
        }
        ctx.restore();
      }],
    },
  };
}

function curveChart(container, curve) {
  const points = curve.points || [];
  if (points.length === 0) {
    container.append(h('p', { class: 'muted', text: 'No points to plot.' }));
    return null;
  }
  const xs = points.map((p) => p.t);
  let lastPast = -1;
  points.forEach((p, i) => { if (!p.projected) lastPast = i; });
  const past = points.map((p) => (p.projected ? null : p.retention));
  // The projection starts where the past ends, so the two lines meet.
  const projected = points.map((p, i) => (p.projected || i === lastPast ? p.retention : null));
  // A strengthening recall is a jump; a recall that strengthened nothing changes nothing.
  const recallTimes = [];
  for (const event of curve.events || []) {
    if (event.kind !== 'strengthened') continue;
    if (!recallTimes.some((t) => Math.abs(t - event.t) < 0.01)) recallTimes.push(event.t);
  }
  // A marker on the top of each jump: the point at the recall's own time.
  const markers = points.map((p) => (recallTimes.some((t) => Math.abs(t - p.t) < 0.0005) ? p.retention : null));
  const data = [xs, past, projected, markers];
  const colors = { line: cssVar('--chart-1', '#2563eb'), projection: cssVar('--chart-2', '#7c3aed'), threshold: cssVar('--chart-warn', '#dc2626'), recall: cssVar('--chart-3', '#059669'), grid: cssVar('--chart-grid', '#e5e7eb'), text: cssVar('--text-muted', '#6b7280') };
  const series = [
    {},
    { label: 'Retention', stroke: colors.line, width: 2, spanGaps: false, value: (u, v) => fmt(v, 3) },
    { label: 'Projection', stroke: colors.projection, width: 2, dash: [6, 5], spanGaps: false, value: (u, v) => fmt(v, 3) },
    { label: 'Recall', stroke: colors.recall, fill: colors.recall, paths: () => null, points: { show: true, size: 9, fill: colors.recall, stroke: colors.recall }, value: (u, v) => (v == null ? '—' : fmt(v, 3)) },
  ];
  if (typeof curve.archive_below === 'number') {
    data.push(xs.map(() => curve.archive_below));
    series.push({ label: `Archive threshold (${fmt(curve.archive_below, 3)})`, stroke: colors.threshold, width: 1.5, dash: [2, 4], value: (u, v) => fmt(v, 3) });
  }
  const marks = recallTimes.map((t) => ({ t, color: colors.recall, width: 1, dash: [3, 3] }));
  const nowT = Date.parse(curve.now) / 1000;
  if (Number.isFinite(nowT)) marks.push({ t: nowT, color: colors.text, width: 1, dash: [1, 3], label: 'now' });
  const archiveT = curve.projected_archive_at ? Date.parse(curve.projected_archive_at) / 1000 : NaN;
  if (Number.isFinite(archiveT)) marks.push({ t: archiveT, color: colors.threshold, width: 1, dash: [4, 3], label: 'archive' });
  const axis = { stroke: colors.text, grid: { stroke: colors.grid, width: 1 }, ticks: { stroke: colors.grid } };
  const plot = mountChart(container, {
    tzDate: tzDate(userTimeZone()),
    scales: { x: { time: true }, y: { range: [0, 1.05] } },
    axes: [{ ...axis }, { ...axis, label: 'Retention', size: 56, values: (u, vals) => vals.map((v) => v.toFixed(1)) }],
    series,
    legend: { live: true },
    cursor: { drag: { x: true, y: false } },
    plugins: [verticalMarks(marks)],
  }, data);
  container.dataset.points = String(points.length);
  container.dataset.recallMarkers = String(recallTimes.length);
  return plot;
}

function overviewChart(container, logDays) {
  // The day before the first event nothing existed yet: the lines start from zero (and
  // uPlot needs two x values to lay out a time axis).
  const first = Date.parse(`${logDays[0].day}T00:00:00Z`);
  const before = { day: new Date(first - 86400e3).toISOString().slice(0, 10), active: 0, archived: 0, superseded: 0, erased: 0 };
  // The counts hold until the next day with events: the last day's are drawn to its end
  // (midnight after it), so a single day reads as a level, not as a lone spike.
  const last = logDays[logDays.length - 1];
  const end = { ...last, day: new Date(Date.parse(`${last.day}T00:00:00Z`) + 86400e3).toISOString().slice(0, 10) };
  const days = [before, ...logDays, end];
  const xs = days.map((d) => Date.parse(`${d.day}T00:00:00Z`) / 1000);
  const names = ['active', 'archived', 'superseded', 'erased'];
  const colors = [cssVar('--chart-1', '#2563eb'), cssVar('--chart-4', '#d97706'), cssVar('--chart-2', '#7c3aed'), cssVar('--chart-warn', '#dc2626')];
  const data = [xs, ...names.map((n) => days.map((d) => d[n] ?? 0))];
  const grid = cssVar('--chart-grid', '#e5e7eb');
  const text = cssVar('--text-muted', '#6b7280');
  const axis = { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid } };
  const dayLabel = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
  const stepped = window.uPlot?.paths?.stepped ? window.uPlot.paths.stepped({ align: 1 }) : undefined;
  mountChart(container, {
    tzDate: tzDate('UTC'),
    scales: {
      // At least a week wide, so one or two days of events do not stretch over years, and
      // widened into the past only: the axis ends with the last day with events (its end,
      // at midnight after it), never in days that have not come.
      x: { time: true, range: (u, min, max) => {
        const range = [Math.min(min, max - 7 * 86400), max];
        container.dataset.xFrom = String(range[0]);
        container.dataset.xTo = String(range[1]);
        return range;
      } },
      y: { range: (u, min, max) => [0, Math.max(1, Math.ceil(max * 1.1))] },
    },
    axes: [
      // Whole days only: the counts are per day.
      { ...axis, incrs: [86400, 2 * 86400, 7 * 86400, 14 * 86400, 30 * 86400, 91 * 86400, 182 * 86400, 365 * 86400], values: (u, splits) => splits.map((v) => dayLabel.format(new Date(v * 1000))) },
      { ...axis, label: 'Memories', size: 56, values: (u, vals) => vals.map((v) => (Number.isInteger(v) ? String(v) : '')) },
    ],
    series: [
      { value: (u, v) => (v == null ? '—' : new Date(v * 1000).toISOString().slice(0, 10)) },
      ...names.map((n, i) => ({ label: n, stroke: colors[i], width: 2, paths: stepped, points: { show: true, size: 6, fill: colors[i] } })),
    ],
    cursor: { drag: { x: false, y: false } },
  }, data);
  container.dataset.days = String(logDays.length);
}

// ---------------------------------------------------------------------------------------
// The shell: header, navigation, user picker, routing

const PAGES = [
  ['memories', 'Memories'],
  ['chat', 'Chat'],
  ['summaries', 'Summaries'],
  ['next', 'Next to forget'],
  ['overview', 'Overview'],
];

function parseRoute() {
  const raw = location.hash.replace(/^#/, '');
  const [path, qs] = raw.split('?');
  const parts = (path || '').split('/').filter(Boolean);
  return { name: parts[0] || 'memories', arg: parts[1] ? decodeURIComponent(parts[1]) : null, params: new URLSearchParams(qs || '') };
}

function renderNav(current) {
  const nav = $('.nav');
  nav.hidden = false;
  const list = h('ul', {});
  for (const [name, label] of PAGES) {
    list.append(h('li', {}, h('a', { href: `#/${name}`, testid: `nav-${name}`, 'aria-current': current === name ? 'page' : null }, label)));
  }
  fill(nav, list);
}

function setUser(user) {
  state.user = user;
  if (user) sessionStorage.setItem(USER_STORAGE, user);
  else sessionStorage.removeItem(USER_STORAGE);
}

async function openOtherUser() {
  const input = h('input', { type: 'text', name: 'user', required: true, autocomplete: 'off', testid: 'other-user-input' });
  const user = await openDialog({
    title: 'Open a user',
    testid: 'other-user-dialog',
    body: [field('User id', input, 'A user of this tenant; it appears in the list once it has memories.')],
    confirmLabel: 'Open',
    collect: () => input.value.trim(),
  });
  if (user) {
    if (!state.users.some((u) => u.user === user)) state.users.push({ user, time_zone: 'UTC', created_at: null, unlisted: true });
    setUser(user);
    renderSession();
    render();
  }
}

function renderSession() {
  const box = $('.session');
  box.hidden = false;
  const about = state.about || {};
  const select = h('select', { id: 'user-select', testid: 'user-select' });
  if (state.users.length === 0) select.append(h('option', { value: '', text: '(no users yet)' }));
  for (const u of state.users) select.append(h('option', { value: u.user, text: u.user }));
  if (!about.user) select.append(h('option', { value: '__other__', text: 'Another user…' }));
  select.value = state.user ?? '';
  select.addEventListener('change', () => {
    if (select.value === '__other__') {
      select.value = state.user ?? '';
      openOtherUser();
      return;
    }
    setUser(select.value || null);
    renderSession();
    render();
  });
  const tz = state.user ? userTimeZone() : null;
  const who = about.auth === 'loopback'
    ? 'local, no key'
    : [about.tenant ? `tenant ${about.tenant}` : null, about.user ? `key for ${about.user}` : (about.role ? `${about.role} key` : null)].filter(Boolean).join(' · ');
  fill(box, 
    h('div', { class: 'user-pick' }, h('label', { for: 'user-select', text: 'User' }), select),
    h('span', { class: 'session-info', testid: 'session-info' }, [who, tz ? `days in ${tz}` : null].filter(Boolean).join(' · ')),
    state.key ? h('button', { type: 'button', class: 'button small ghost', testid: 'signout', onclick: signOut }, 'Sign out') : null,
  );
}

let generation = 0;
let pageAbort = null;
let firstRender = true;

async function render() {
  const mine = ++generation;
  pageAbort?.abort();
  pageAbort = new AbortController();
  destroyCharts();
  document.querySelectorAll('dialog[open]').forEach((d) => d.close());
  // A confirmation belongs to the page it was said on: a new page starts without it.
  clearTimeout(statusTimer);
  $('#status').textContent = '';
  if (!state.signedIn) {
    $('.nav').hidden = true;
    $('.session').hidden = true;
    renderSignIn();
    return;
  }
  const route = parseRoute();
  const requested = route.params.get('user');
  if (requested && requested !== state.user) {
    if (!state.users.some((u) => u.user === requested)) state.users.push({ user: requested, time_zone: 'UTC', created_at: null, unlisted: true });
    setUser(requested);
    renderSession();
  } else if (!requested && state.about?.user && state.user !== state.about.user) {
    // A key bound to one user: another user asked for by `?user=` is shown (with the API's
    // refusal) only on that route, never kept.
    state.users = state.users.filter((u) => !u.unlisted || u.user === state.about.user);
    setUser(state.about.user);
    renderSession();
  }
  renderNav(route.name === 'memory' ? 'memories' : route.name);
  const main = $('#main');
  const page = PAGE_RENDERERS[route.name] || notFoundPage;
  const ctx = { signal: pageAbort.signal, alive: () => mine === generation, route };
  const focusHeading = !firstRender;
  firstRender = false;
  try {
    await page(main, ctx);
  } catch (err) {
    if (!isAbort(err) && ctx.alive()) showError(err);
  }
  if (focusHeading && ctx.alive()) {
    const heading = main.querySelector('h1');
    if (heading) {
      heading.tabIndex = -1;
      heading.focus({ preventScroll: false });
    }
  }
}

/** Starts a page: its title and a body to fill; the old page is replaced at once. */
function pageFrame(main, title, testid, intro) {
  document.title = `${title} · membank`;
  const body = h('div', { class: 'page-body' });
  const section = h('section', { class: `page page-${testid}`, testid: `page-${testid}` },
    h('h1', { text: title }),
    intro ? h('p', { class: 'intro', text: intro }) : null,
    body);
  fill(main, section);
  return { section, body };
}

function needUser(body) {
  if (state.user) return false;
  if (state.users.length === 0 && !state.about?.user) {
    body.append(startHint());
    return true;
  }
  body.append(h('div', { class: 'empty', testid: 'no-user' },
    h('p', { text: 'No user is chosen. A user appears once something is remembered for them (POST /v1/users/{user}/turns).' }),
    state.about?.user ? null : h('button', { type: 'button', class: 'button', onclick: openOtherUser }, 'Open a user by id')));
  return true;
}

/** An empty server's page: the lines that start it, to copy, and a first note added here. */
function startHint() {
  const origin = location.origin;
  const auth = state.key ? " -H 'Authorization: Bearer YOUR_KEY'" : '';
  const curl = `curl -X POST ${origin}/v1/users/alice/notes${auth} -H 'Content-Type: application/json' -d '{"text":"Alice adopted a grey cat named Miso"}'`;
  const cli = 'membank note --user alice --text "Alice adopted a grey cat named Miso"';
  const user = h('input', { type: 'text', name: 'user', required: true, autocomplete: 'off', testid: 'first-note-user', placeholder: 'alice' });
  return h('div', { class: 'empty start', testid: 'start-hint' },
    h('p', { text: 'This server holds no memories yet. Store a first one with the API, the CLI (on the server’s database), or the form below:' }),
    h('pre', { class: 'copyable', testid: 'start-curl' }, h('code', { text: curl })),
    h('pre', { class: 'copyable', testid: 'start-cli' }, h('code', { text: cli })),
    noteForm({ user, onStored: async (forUser) => {
      await refreshUsers();
      setUser(forUser);
      renderSession();
      render();
    } }));
}

/** Asks the server for the users again (after a first note made one). */
async function refreshUsers() {
  try {
    const out = await api('GET', '/v1/users');
    state.users = out.users;
  } catch (err) {
    showError(err, 'Could not list the users');
  }
}

/**
 * "Add a note": a free-form note for the chosen user (or for `user`, an input of its own),
 * with an optional date (the person's local midnight, as the API reads a bare date).
 */
function noteForm({ user = null, onStored }) {
  const text = h('textarea', { name: 'text', rows: 2, required: true, testid: 'note-text', placeholder: 'e.g. Alice is allergic to peanuts' });
  const day = h('input', { type: 'date', name: 'day', testid: 'note-day' });
  const submit = h('button', { type: 'submit', class: 'button primary', testid: 'note-submit' }, 'Add the note');
  const form = h('form', { class: 'note-form', testid: 'note-form' },
    h('h2', { text: 'Add a note' }),
    user ? field('User id', user) : null,
    field('Note', text),
    field('Day (optional)', day, 'Empty: now. A date is that day’s midnight in the user’s time zone.'),
    h('div', { class: 'row' }, submit));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearError();
    const forUser = user ? user.value.trim() : state.user;
    const note = text.value.trim();
    if (!forUser || !note) return;
    submit.disabled = true;
    try {
      await api('POST', `/v1/users/${encodeURIComponent(forUser)}/notes`, { body: { text: note, source: 'user', occurred_at: day.value || undefined } });
      text.value = '';
      day.value = '';
      announce(`Note added for ${forUser}.`);
      await onStored(forUser);
    } catch (err) {
      showError(err, 'Could not add the note');
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}

/** The user's time zone, read and set through `PATCH /v1/users/{user}`. */
function timeZoneForm() {
  const input = h('input', { type: 'text', name: 'time_zone', testid: 'tz-input', value: userTimeZone(), autocomplete: 'off', spellcheck: 'false' });
  const submit = h('button', { type: 'submit', class: 'button', testid: 'tz-submit' }, 'Save');
  const form = h('form', { class: 'tz-form', testid: 'tz-form' },
    field('Time zone (IANA, e.g. Europe/Lisbon)', input, 'Days of new memories and typed dates are counted in it; stored days keep theirs.'),
    h('div', { class: 'row' }, submit));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearError();
    const zone = input.value.trim();
    if (!zone) return;
    submit.disabled = true;
    try {
      const out = await api('PATCH', userPath(), { body: { time_zone: zone } });
      const known = state.users.find((u) => u.user === state.user);
      if (known) known.time_zone = out.time_zone;
      else state.users.push({ user: out.user, time_zone: out.time_zone, created_at: out.created_at });
      input.value = out.time_zone;
      renderSession();
      announce(`${out.user} now counts days in ${out.time_zone}.`);
    } catch (err) {
      showError(err, 'Could not set the time zone');
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}

function loading(text = 'Loading…') {
  return h('p', { class: 'loading', role: 'status', text });
}

function notFoundPage(main) {
  const { body } = pageFrame(main, 'Not found', 'not-found');
  body.append(h('p', {}, 'There is no such page. ', h('a', { href: '#/memories' }, 'Open the memories')));
}

// ---------------------------------------------------------------------------------------
// Sign in and out

function renderSignIn(message) {
  document.title = 'Sign in · membank';
  const input = h('input', { id: 'signin-key', type: 'password', name: 'key', autocomplete: 'off', spellcheck: 'false', required: true, testid: 'signin-key' });
  const form = h('form', { class: 'card signin-form', testid: 'signin-form' },
    field('API key', input),
    h('button', { type: 'submit', class: 'button primary', testid: 'signin-submit' }, 'Sign in'));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearError();
    const key = input.value.trim();
    if (!key) return;
    form.querySelector('button').disabled = true;
    try {
      await signIn(key);
    } catch (err) {
      showError(err, 'Sign-in failed');
      input.focus();
      input.select();
    } finally {
      if (form.isConnected) form.querySelector('button').disabled = false;
    }
  });
  fill($('#main'), h('section', { class: 'page page-signin', testid: 'page-signin' },
    h('h1', { text: 'Sign in' }),
    h('p', { class: 'intro' }, 'Paste an API key of this server. Keys are made with ', h('code', { text: 'membank keys create --tenant T [--user U]' }), '. It is kept in this tab only (session storage) and sent as a bearer token.'),
    message ? h('p', { class: 'muted', text: message }) : null,
    form));
  input.focus();
}

/** `GET /v1/about` with `key` (or none); falls back to `/v1/users` on a server without it. */
async function fetchAbout(key) {
  try {
    return await api('GET', '/v1/about', { key });
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) {
      await api('GET', '/v1/users', { key });
      return { version: null, auth: key ? 'keys' : 'loopback', tenant: null, user: null, role: null, llm: undefined, forgetting: null };
    }
    throw err;
  }
}

async function signIn(key) {
  const about = await fetchAbout(key);
  state.key = key;
  if (key) sessionStorage.setItem(KEY_STORAGE, key);
  await enter(about);
}

async function enter(about) {
  state.about = about;
  const { users } = await api('GET', '/v1/users');
  state.users = users;
  if (about.user && !users.some((u) => u.user === about.user)) state.users.push({ user: about.user, time_zone: 'UTC', created_at: null, unlisted: true });
  const remembered = sessionStorage.getItem(USER_STORAGE);
  const pick = about.user || (state.users.some((u) => u.user === remembered) ? remembered : state.users[0]?.user) || null;
  setUser(pick);
  state.signedIn = true;
  renderSession();
  if (!location.hash || location.hash === '#' || location.hash.startsWith('#/signin')) location.hash = '#/memories';
  else render();
}

function signOut() {
  sessionStorage.removeItem(KEY_STORAGE);
  sessionStorage.removeItem(USER_STORAGE);
  state.key = null;
  state.signedIn = false;
  state.about = null;
  state.users = [];
  state.user = null;
  state.chats.clear();
  clearError();
  announce('Signed out.');
  render();
}

async function boot() {
  window.addEventListener('hashchange', () => { clearError(); render(); });
  const stored = sessionStorage.getItem(KEY_STORAGE);
  if (stored) {
    try {
      await signIn(stored);
      return;
    } catch (err) {
      sessionStorage.removeItem(KEY_STORAGE);
      state.key = null;
      renderSignIn();
      showError(err, 'The saved key no longer works');
      return;
    }
  }
  // A server with keys gets the sign-in page at once, without a request it would refuse
  // (a 401 in the console of every fresh browser); a loopback server answers without one.
  try {
    const health = await api('GET', '/healthz', { key: null });
    if (health?.auth === 'keys') {
      renderSignIn();
      return;
    }
  } catch {
    // An older server says nothing of its auth: ask it as before.
  }
  try {
    const about = await fetchAbout(null);
    await enter(about);
  } catch (err) {
    renderSignIn();
    if (!(err instanceof ApiError && err.status === 401)) showError(err);
  }
}

// ---------------------------------------------------------------------------------------
// The memory browser

/** Search hits with a lower cosine than this (other than the best) are hidden until asked for. */
const RELEVANCE_CUTOFF = 0.25;

function filterBar(onChange) {
  const f = state.filters;
  const kind = h('select', { id: 'filter-kind', testid: 'filter-kind' }, h('option', { value: '', text: 'all kinds' }), KINDS.map((k) => h('option', { value: k, text: KIND_LABEL[k] })));
  kind.value = f.kind;
  const status = h('select', { id: 'filter-status', testid: 'filter-status' },
    STATUSES.map((s) => h('option', { value: s, text: s })),
    h('option', { value: 'all', text: 'any status' }));
  status.value = f.status;
  const from = h('input', { id: 'filter-from', type: 'date', testid: 'filter-from', value: f.from });
  const to = h('input', { id: 'filter-to', type: 'date', testid: 'filter-to', value: f.to });
  const pinned = h('input', { id: 'filter-pinned', type: 'checkbox', testid: 'filter-pinned', checked: f.pinned });
  const update = () => {
    Object.assign(state.filters, { kind: kind.value, status: status.value, from: from.value, to: to.value, pinned: pinned.checked });
    onChange();
  };
  for (const control of [kind, status, from, to, pinned]) control.addEventListener('change', update);
  const reset = h('button', { type: 'button', class: 'button small ghost', testid: 'filter-reset' }, 'Reset');
  reset.addEventListener('click', () => {
    state.filters = { kind: '', status: 'active', from: '', to: '', pinned: false };
    kind.value = ''; status.value = 'active'; from.value = ''; to.value = ''; pinned.checked = false;
    onChange();
  });
  return h('form', { class: 'filters', testid: 'filters', 'aria-label': 'Filters', onsubmit: (e) => { e.preventDefault(); update(); } },
    h('div', { class: 'field inline' }, h('label', { for: 'filter-kind', text: 'Kind' }), kind),
    h('div', { class: 'field inline' }, h('label', { for: 'filter-status', text: 'Status' }), status),
    h('div', { class: 'field inline' }, h('label', { for: 'filter-from', text: 'From' }), from),
    h('div', { class: 'field inline' }, h('label', { for: 'filter-to', text: 'To' }), to),
    h('div', { class: 'field inline check' }, pinned, h('label', { for: 'filter-pinned', text: 'Pinned only' })),
    reset);
}

function statusQuery() {
  return state.filters.status === 'all' ? STATUSES.join(',') : state.filters.status;
}

function countsLine(list) {
  const c = list.counts || {};
  const parts = STATUSES.map((s) => `${c[s] ?? 0} ${s}`);
  const line = h('p', { class: 'counts', testid: 'counts' }, parts.join(' · '));
  if (list.past_threshold) line.append(h('span', { class: 'warn-text', text: ` · ${list.past_threshold} listed past the archive threshold` }));
  return line;
}

function timeline(memories, onChange) {
  const groups = new Map();
  for (const m of memories) {
    if (!groups.has(m.day)) groups.set(m.day, []);
    groups.get(m.day).push(m);
  }
  const root = h('div', { class: 'timeline', testid: 'timeline' });
  for (const [day, list] of groups) {
    const headingId = `day-${day}`;
    root.append(h('section', { class: 'day', testid: 'day-group', 'data-day': day, 'aria-labelledby': headingId },
      h('h2', { class: 'day-heading', id: headingId },
        h('time', { datetime: day, text: fmtDay(day) }),
        h('span', { class: 'day-count', text: `${list.length} ${list.length === 1 ? 'memory' : 'memories'}` })),
      h('div', { class: 'day-list' }, list.map((m) => memoryCard(m, { onChange })))));
  }
  return root;
}

function scoreLine(hit) {
  const parts = hit.score_parts || {};
  const item = (label, value, testid, detail) => h('span', { class: 'score', testid },
    h('span', { class: 'score-label', text: label }), ' ', h('span', { class: 'score-value', text: fmt(value, 4) }), detail ? h('span', { class: 'score-detail', text: ` ${detail}` }) : null);
  const denseDetail = hit.dense_rank ? `(rank ${hit.dense_rank}${typeof hit.dense_score === 'number' ? `, cosine ${fmt(hit.dense_score, 3)}` : ''})` : '(not a dense match)';
  const lexicalDetail = hit.lexical_rank ? `(rank ${hit.lexical_rank}${typeof hit.lexical_score === 'number' ? `, BM25 ${fmt(hit.lexical_score, 2)}` : ''})` : '(no shared words)';
  return h('div', { class: 'scores', testid: 'hit-scores' },
    item('fused', hit.score, 'score-fused'),
    item('dense', parts.dense ?? 0, 'score-dense', denseDetail),
    item('lexical', parts.lexical ?? 0, 'score-lexical', lexicalDetail),
    parts.date ? item('date', parts.date, 'score-date') : null,
    parts.neighbour ? item('neighbour', parts.neighbour, 'score-neighbour') : null);
}

async function memoriesPage(main, ctx) {
  const { body } = pageFrame(main, 'Memories', 'memories');
  if (needUser(body)) return;
  const results = h('div', { class: 'search-results', testid: 'search-results', hidden: true });
  const listBox = h('div', { class: 'list-box' }, loading());
  let memories = [];
  let offset = 0;
  const pageSize = 100;

  let countsNode = null;
  // After an action the counts line follows: the store's counts are asked for again (one
  // memory's page is enough) and the past-threshold count is taken from the listed cards.
  const refreshCounts = async () => {
    const f = state.filters;
    try {
      const list = await api('GET', userPath('/memories'), { signal: ctx.signal, query: { status: statusQuery(), kind: f.kind, from: f.from, to: f.to, pinned: f.pinned ? 'true' : '', limit: 1 } });
      if (!ctx.alive() || !countsNode) return;
      const fresh = countsLine({ counts: list.counts, past_threshold: memories.filter((m) => m.past_threshold).length });
      countsNode.replaceWith(fresh);
      countsNode = fresh;
    } catch (err) {
      if (!isAbort(err) && ctx.alive()) showError(err, 'Could not refresh the counts');
    }
  };

  const onChange = (card, result, action) => {
    replaceCard(card, result, action, (m) => memoryCard(m, { onChange }));
    const i = memories.findIndex((m) => m.id === result.memory.id);
    if (i >= 0) memories[i] = result.memory;
    refreshCounts();
  };

  const load = async (more = false) => {
    if (!more) {
      offset = 0;
      memories = [];
      fill(listBox, loading());
    }
    const f = state.filters;
    try {
      const list = await api('GET', userPath('/memories'), {
        signal: ctx.signal,
        query: { status: statusQuery(), kind: f.kind, from: f.from, to: f.to, pinned: f.pinned ? 'true' : '', limit: pageSize, offset },
      });
      if (!ctx.alive()) return;
      memories = memories.concat(list.memories);
      offset += list.memories.length;
      countsNode = countsLine(list);
      const nodes = [countsNode];
      if (memories.length === 0) {
        nodes.push(h('p', { class: 'empty', testid: 'empty', text: 'No memories match these filters.' }));
      } else {
        nodes.push(timeline(memories, onChange));
      }
      if (list.memories.length === pageSize) {
        const more = h('button', { type: 'button', class: 'button', testid: 'load-more' }, 'Load more');
        more.addEventListener('click', () => { more.disabled = true; load(true); });
        nodes.push(more);
      }
      fill(listBox, ...nodes);
    } catch (err) {
      if (isAbort(err) || !ctx.alive()) return;
      fill(listBox, h('p', { class: 'empty error-text', testid: 'list-error', text: `Could not load the memories: ${err.message}` }));
      showError(err, 'Could not load the memories');
    }
  };

  const query = h('input', { id: 'search-input', type: 'search', name: 'query', testid: 'search-input', placeholder: 'e.g. what did I say about my cat?', autocomplete: 'off' });
  const clear = h('button', { type: 'button', class: 'button ghost', testid: 'search-clear', hidden: true }, 'Clear');
  const search = h('form', { class: 'search', role: 'search', testid: 'search-form' },
    h('label', { for: 'search-input', text: 'Search (a recall that strengthens nothing)' }),
    h('div', { class: 'search-row' }, query, h('button', { type: 'submit', class: 'button primary', testid: 'search-submit' }, 'Search'), clear));
  clear.addEventListener('click', () => {
    query.value = '';
    results.hidden = true;
    fill(results);
    clear.hidden = true;
    query.focus();
  });
  search.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearError();
    const text = query.value.trim();
    if (!text) return;
    results.hidden = false;
    clear.hidden = false;
    fill(results, loading('Searching…'));
    const f = state.filters;
    try {
      const out = await api('POST', userPath('/recall'), {
        signal: ctx.signal,
        body: {
          query: text,
          k: 20,
          strengthen: false,
          kinds: f.kind ? [f.kind] : undefined,
          from: f.from || undefined,
          to: f.to || undefined,
          include_archived: f.status === 'active' ? undefined : true,
        },
      });
      if (!ctx.alive()) return;
      const onHitChange = (card, result, action) => replaceCard(card, result, action, (m) => memoryCard(m, { onChange: onHitChange, withDay: true }));
      const nodes = [h('h2', { text: `${out.results.length} ${out.results.length === 1 ? 'result' : 'results'} for “${text}”` })];
      if (out.date_filter) {
        const d = out.date_filter;
        nodes.push(h('p', { class: 'muted', testid: 'search-date-filter', text: `${d.mode === 'boost' ? 'Boosted' : 'Restricted to'} ${d.from ?? '…'} to ${d.to ?? '…'}${d.from_query ? ` (from “${d.from_query}”)` : ''}.` }));
      }
      nodes.push(h('p', { class: 'muted', text: 'Fused = dense + lexical (+ date, neighbour) by reciprocal rank fusion; nothing was strengthened or logged as a recall.' }));
      const hits = h('ol', { class: 'hits' });
      // Below the relevance cut-off (cosine under RELEVANCE_CUTOFF, and not the best hit) a
      // hit is hidden until asked for: a recall always fills k, down to unrelated memories.
      const weak = out.results.filter((hit, i) => i > 0 && (hit.dense_score ?? 0) < RELEVANCE_CUTOFF);
      for (const hit of out.results) {
        const hidden = weak.includes(hit);
        hits.append(h('li', { class: 'hit', testid: 'search-hit', 'data-id': hit.id, 'data-weak': hidden ? 'true' : null, hidden }, memoryCard(hit, { onChange: onHitChange, extra: scoreLine(hit), withDay: true })));
      }
      if (out.results.length === 0) nodes.push(h('p', { class: 'empty', text: 'Nothing recalled.' }));
      nodes.push(hits);
      if (weak.length) {
        const showAll = h('button', { type: 'button', class: 'button small ghost', testid: 'search-show-all' }, `Show ${weak.length} weaker ${weak.length === 1 ? 'result' : 'results'}`);
        const note = h('p', { class: 'muted', testid: 'search-cutoff' }, `${weak.length} ${weak.length === 1 ? 'result' : 'results'} below the relevance cut-off (cosine < ${RELEVANCE_CUTOFF}) hidden. `, showAll);
        showAll.addEventListener('click', () => {
          hits.querySelectorAll('li[data-weak]').forEach((li) => { li.hidden = false; });
          note.remove();
        });
        nodes.push(note);
      }
      fill(results, ...nodes);
    } catch (err) {
      if (isAbort(err) || !ctx.alive()) return;
      fill(results, h('p', { class: 'error-text', text: `Search failed: ${err.message}` }));
      showError(err, 'Search failed');
    }
  });

  const adding = h('details', { class: 'add-note', testid: 'add-note' },
    h('summary', { text: 'Add a note · time zone' }),
    noteForm({ onStored: () => load(false) }),
    timeZoneForm());
  body.append(search, results, adding, filterBar(() => load(false)), listBox);
  await load(false);
}

// ---------------------------------------------------------------------------------------
// One memory: details, history, forgetting curve

function detailsList(memory) {
  const rows = [
    ['Id', h('code', { text: memory.id })],
    ['Kind', KIND_LABEL[memory.kind] || memory.kind],
    ['Source', memory.source],
    ['Status', h('span', { testid: 'detail-status', text: memory.status })],
    ['Day', memory.day],
    ['Said', timeEl(memory.occurred_at)],
    ['Stored', timeEl(memory.recorded_at)],
    ['Strength S', h('span', { testid: 'detail-strength', text: fmt(memory.strength, 2) })],
    ['Retention R now', h('span', { testid: 'detail-retention' }, retentionValue(memory.retention))],
    ['Recalls', h('span', { testid: 'detail-recalls', text: String(memory.recall_count) })],
    ['Last recalled (clock)', timeEl(memory.last_recalled_at)],
    ['Pinned', memory.pinned ? 'yes: never decays' : 'no'],
  ];
  // Importance slows both curves (MemoryBank's S + w·I, FadeMem's λ); the layer, effective
  // age and access frequency are FadeMem's own and shown only under it.
  rows.push(['Importance', h('span', { testid: 'detail-importance', text: fmt(memory.importance, 3) })], ['Base importance', fmt(memory.base_importance, 3)]);
  if (fademem()) {
    rows.push(['Layer', h('span', { testid: 'detail-layer', text: memory.layer })], ['Effective age (days)', fmt(memory.fade_age, 2)], ['Access frequency', fmt(memory.access_frequency, 2)]);
  }
  if (memory.agent) rows.push(['Agent', memory.agent]);
  if (memory.session) rows.push(['Session', memory.session]);
  if (memory.derived_from && memory.derived_from.length) {
    rows.push(['Derived from', h('span', { class: 'links', testid: 'derived-from' }, memory.derived_from.map((id) => memoryLink(id)))]);
  }
  for (const [k, v] of Object.entries(memory.metadata || {})) rows.push([`metadata.${k}`, String(v)]);
  if (memory.past_threshold) rows.push(['Warning', h('span', { class: 'warn-text', text: 'Past the archive threshold: the next sweep archives it unless it is recalled or pinned.' })]);
  return h('dl', { class: 'details', testid: 'memory-details' }, rows.map(([k, v]) => h('div', { class: 'detail-row' }, h('dt', {}, breakable(k)), h('dd', {}, v))));
}

/** A key such as `metadata.importance_source` that may wrap after a dot or an underscore, never inside a word. */
function breakable(key) {
  return key.split(/(?<=[._])/).flatMap((part, i) => (i ? [h('wbr', {}), part] : [part]));
}

const EVENT_TITLE = {
  created: 'Created', recalled: 'Recalled', strengthened: 'Strengthened', archived: 'Archived', restored: 'Restored',
  pinned: 'Pinned', unpinned: 'Unpinned', edited: 'Edited', superseded: 'Superseded', summarized: 'Summarized',
  erased: 'Erased', promoted: 'Promoted', demoted: 'Demoted', merged: 'Merged', fused: 'Fused', conflict: 'Conflict decided',
  reminisced: 'Reminisced',
};

/** A data value, with memory ids as links (the recall's query id is not a memory). */
function dataValue(key, value) {
  if (key === 'query_id' || key === 'seed') return h('code', { text: String(value) });
  if (typeof value === 'string' && UUID.test(value)) return memoryLink(value);
  if (Array.isArray(value)) {
    return h('span', { class: 'links' }, value.map((v, i) => [i ? ', ' : '', dataValue(key, v)]));
  }
  if (value && typeof value === 'object') {
    return h('span', {}, '{', Object.entries(value).map(([k, v], i) => [i ? ', ' : '', `${k}: `, dataValue(k, v)]), '}');
  }
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : fmt(value, 4);
  return String(value);
}

function eventSummary(event) {
  const d = event.data || {};
  switch (event.kind) {
    case 'created':
      return `Stored (${KIND_LABEL[d.kind] || d.kind || 'memory'}, ${d.source || 'unknown source'}); the forgetting clock starts ${d.clock_started_at ? fmtDateTime(d.clock_started_at) : 'at once'} with S = ${fmt(d.strength, 2)}.`;
    case 'recalled':
      return `Returned by a recall (rank ${d.rank ?? '?'}, score ${fmt(d.score, 4)}).`;
    case 'strengthened':
      // Spaced strengthening: only a memory's first recall in a unit of time adds to S.
      if (d.strength_before === d.strength_after) return `Recalled again within the same ${unitWords() === 'days' ? 'day' : 'unit of time'}: S stays ${fmt(d.strength_after, 2)} (a memory grows stronger once per ${unitWords() === 'days' ? 'day' : 'unit'}); its clock restarts.`;
      return `Strength S ${fmt(d.strength_before, 2)} → ${fmt(d.strength_after, 2)}.`;
    case 'archived':
      if (d.policy === 'request') return `Forgotten on request${d.reason ? `: “${d.reason}”` : ''}.`;
      if (d.policy === 'fademem') return `Archived by FadeMem: age ${fmt(d.age_days, 2)} days, v = ${fmt(d.v, 4)}${d.threshold != null ? ` < ε = ${fmt(d.threshold, 4)}` : ''}.`;
      return `Archived by the sweep: t = ${fmt(d.t, 3)} ${unitWords()}, S = ${fmt(d.strength, 2)}, R = ${fmt(d.retention, 4)}${d.threshold != null ? ` < θ = ${fmt(d.threshold, 4)}` : ''}${d.mode ? ` (${d.mode})` : ''}.`;
    case 'restored':
      return `Restored${d.previous_status ? ` (was ${d.previous_status})` : ''}.`;
    case 'reminisced':
      return `Brought back from the archive ${d.confirmed_used ? 'when a reply used it' : 'by a recall'}, with savings: S ${fmt(d.strength_before, 2)} → ${fmt(d.strength_after, 2)} (S when archived ${fmt(d.strength_at_archive, 2)}, plus one).`;
    case 'superseded':
      return `Superseded${d.reason ? ` (${d.reason})` : d.rule ? ` (${d.rule})` : ''} by:`;
    case 'edited':
      return 'A new version made by editing:';
    case 'summarized':
      return `Made from ${Array.isArray(d.sources) ? d.sources.length : 'its'} sources.`;
    case 'erased':
      return d.cascade_of ? 'Erased with the memory it came from.' : 'Erased: content, vector and index entry deleted.';
    case 'promoted':
    case 'demoted':
      return `Layer ${d.from ?? '?'} → ${d.to ?? '?'} (importance ${fmt(d.importance, 3)}).`;
    default:
      return '';
  }
}

function eventItem(event) {
  const title = EVENT_TITLE[event.kind] || event.kind;
  const d = event.data || {};
  const summary = eventSummary(event);
  const links = [];
  if (event.kind === 'superseded' && d.by) links.push(memoryLink(d.by, `the newer memory ${shortId(d.by)}`));
  if (event.kind === 'edited' && d.previous) links.push('previous version: ', memoryLink(d.previous, `memory ${shortId(d.previous)}`));
  const entries = Object.entries(d).filter(([, v]) => v !== null && v !== undefined && !(Array.isArray(v) && v.length === 0));
  return h('li', { class: `event event-${event.kind}`, testid: 'event', 'data-kind': event.kind, 'data-seq': String(event.seq) },
    h('div', { class: 'event-head' }, h('span', { class: `badge event-kind ev-${event.kind}`, text: title }), ' ', timeEl(event.at)),
    summary || links.length ? h('p', { class: 'event-summary' }, summary, links.length ? ' ' : '', links) : null,
    entries.length ? h('dl', { class: 'event-data' }, entries.map(([k, v]) => h('div', {}, h('dt', { text: k }), h('dd', {}, dataValue(k, v))))) : null);
}

async function memoryPage(main, ctx) {
  const id = ctx.route.arg;
  const { section, body } = pageFrame(main, 'Memory', 'memory');
  if (needUser(body)) return;
  body.append(loading());
  const base = userPath(`/memories/${enc(id)}`);
  const [memory, events, curve] = await Promise.all([
    api('GET', base, { signal: ctx.signal }),
    api('GET', userPath('/events'), { signal: ctx.signal, query: { memory: id, limit: 10000 } }).catch((err) => ({ error: err })),
    // The server's default range: from where the clock started to a little past the
    // projected archive date (at least 30 days ahead).
    api('GET', `${base}/curve`, { signal: ctx.signal }).catch((err) => ({ error: err })),
  ]).catch((err) => {
    fill(body, h('p', { class: 'error-text', testid: 'memory-error', text: `Memory ${id} could not be opened (the message above says why).` }), h('p', {}, h('a', { href: '#/memories' }, 'Back to the memories')));
    throw err;
  });
  if (!ctx.alive()) return;
  const kindLabel = KIND_LABEL[memory.kind] || memory.kind;
  section.querySelector('h1').textContent = `${kindLabel.charAt(0).toUpperCase()}${kindLabel.slice(1)} of ${fmtDay(memory.day)}`;
  document.title = `Memory ${shortId(memory.id)} · membank`;

  const onDone = (result) => {
    if (result.replacedBy) location.hash = `#/memory/${enc(result.replacedBy.id)}`;
    else render();
  };
  const top = h('div', { class: 'memory-page-top' },
    h('p', { class: 'back' }, h('a', { href: '#/memories', testid: 'back' }, '← All memories')),
    h('div', { class: 'card memory-full' },
      h('div', { class: 'memory-head' },
        badge(KIND_LABEL[memory.kind] || memory.kind, `kind kind-${memory.kind}`, 'memory-kind'),
        badge(memory.source, 'source'),
        badge(memory.status, `status status-${memory.status}`, 'memory-status'),
        memory.pinned ? badge('pinned', 'pin', 'memory-pinned') : null),
      memoryText(memory),
      actionBar(memory, onDone, { open: false })));

  const curveBox = h('section', { class: 'card curve', testid: 'curve', 'aria-labelledby': 'curve-title' }, h('h2', { id: 'curve-title', text: 'Forgetting curve' }));
  if (curve.error) {
    curveBox.append(h('p', { class: 'error-text', testid: 'curve-error', text: `The curve could not be loaded: ${curve.error.message}` }));
  } else {
    const chart = h('div', { class: 'chart', testid: 'curve-chart', role: 'img' });
    const recalls = (curve.events || []).filter((e) => e.kind === 'strengthened').length;
    // The route nests the memory (`curve.memory`); the fields are read from either place.
    const curveMemory = curve.memory || curve;
    const archiveText = curve.projected_archive_at
      ? `If never recalled again, it would be archived around ${fmtDateTime(curve.projected_archive_at)}.`
      : (curveMemory.pinned ? 'Pinned: it never decays, so it is never archived.' : curveMemory.status !== 'active' ? `It is ${curveMemory.status}: no sweep archives it.` : 'No archive date is projected.');
    chart.setAttribute('aria-label', `Retention of this memory over time, with ${recalls} strengthening recall${recalls === 1 ? '' : 's'}. ${archiveText}`);
    // Two views of the time axis (also: drag across the chart to zoom, double-click to reset).
    const points = curve.points || [];
    const start = points.length ? points[0].t : 0;
    const end = points.length ? points[points.length - 1].t : 0;
    const nowT = Date.parse(curve.now) / 1000;
    const recentEnd = Math.min(end, nowT + Math.max(3 * 86400, (nowT - start) * 0.5));
    let plot = null;
    const viewButton = (label, testid, range) => {
      const button = h('button', { type: 'button', class: 'button small ghost', testid, 'aria-pressed': 'false' }, label);
      button.addEventListener('click', () => {
        if (!plot) return;
        plot.setScale('x', range());
        for (const b of button.parentElement.querySelectorAll('button')) b.setAttribute('aria-pressed', String(b === button));
      });
      return button;
    };
    const whole = viewButton('Whole curve', 'curve-view-all', () => ({ min: start, max: end }));
    whole.setAttribute('aria-pressed', 'true');
    const views = h('div', { class: 'chart-views', role: 'group', 'aria-label': 'Time range' },
      whole, viewButton('Around now', 'curve-view-recent', () => ({ min: start, max: recentEnd })));
    curveBox.append(
      h('p', { class: 'curve-projected', testid: 'curve-projected' }, archiveText),
      views,
      chart,
      h('p', { class: 'muted legend-note' }, 'Solid: retention so far; dashed: the projection if never recalled; dots and dotted lines: recalls; red: the archive threshold. Computed by the server with the same policy code the sweep uses', curve.policy ? ` (${curve.policy})` : '', '.'),
      curve.note ? h('p', { class: 'muted', testid: 'curve-note', text: curve.note }) : null);
    // Drawn once the box is in the page, so the chart knows its width.
    queueMicrotask(() => { if (ctx.alive()) plot = curveChart(chart, curve); });
  }

  const historyBox = h('section', { class: 'card history', 'aria-labelledby': 'history-title' }, h('h2', { id: 'history-title', text: 'History' }));
  if (events.error) {
    historyBox.append(h('p', { class: 'error-text', text: `The history could not be loaded: ${events.error.message}` }));
  } else {
    const list = [...events.events].sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.seq - b.seq));
    historyBox.append(list.length
      ? h('ol', { class: 'events', testid: 'event-list' }, list.map(eventItem))
      : h('p', { class: 'muted', text: 'No events.' }));
  }

  const detailsBox = h('section', { class: 'card', 'aria-labelledby': 'details-title' }, h('h2', { id: 'details-title', text: 'Details' }), detailsList(memory));
  fill(body, top, curveBox, h('div', { class: 'memory-grid' }, detailsBox, historyBox));
  for (const err of [events.error, curve.error]) if (err && !isAbort(err)) showError(err, err === curve.error ? 'Forgetting curve' : 'History');
}

// ---------------------------------------------------------------------------------------
// Chat (streamed)

/** Server-sent events from a fetch Response: yields `{event, data}`. */
async function* readEvents(response, signal) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  const onAbort = () => reader.cancel().catch(() => {});
  signal?.addEventListener('abort', onAbort);
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value.replace(/\r\n?/g, '\n');
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let event = 'message';
        const data = [];
        for (const line of block.split('\n')) {
          if (!line || line.startsWith(':')) continue;
          const colon = line.indexOf(':');
          const name = colon < 0 ? line : line.slice(0, colon);
          let val = colon < 0 ? '' : line.slice(colon + 1);
          if (val.startsWith(' ')) val = val.slice(1);
          if (name === 'event') event = val;
          else if (name === 'data') data.push(val);
        }
        if (data.length) yield { event, data: data.join('\n') };
      }
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

function citedChips(list, testid) {
  return h('ul', { class: 'chips', testid: `${testid}-list` }, list.map((c) => h('li', {},
    h('a', { class: 'chip', href: `#/memory/${enc(c.id)}`, testid, 'data-id': c.id, title: c.content ? snippet(c, 200) : c.id },
      h('span', { class: 'chip-label', text: c.label }), ' ', h('time', { datetime: c.day, text: c.day }), ' ', h('span', { class: 'chip-kind', text: KIND_LABEL[c.kind] || c.kind }),
      c.reminisced ? [' ', h('span', { class: 'chip-reminisced', testid: `${testid}-reminisced`, title: 'Brought back from the archive', text: 'reminisced' })] : null))));
}

function chatMessage(entry) {
  if (entry.role === 'you') {
    return h('li', { class: 'msg you', testid: 'chat-you' }, h('p', { class: 'who', text: 'You' }), h('p', { class: 'text', text: entry.text }));
  }
  const li = h('li', { class: 'msg companion', testid: 'chat-message' });
  const text = h('p', { class: 'text', testid: 'chat-reply' });
  const extra = h('div', { class: 'msg-extra' });
  li.append(h('p', { class: 'who', text: 'Companion' }), text, extra);
  const update = () => {
    text.textContent = visible(entry.text);
    li.setAttribute('aria-busy', entry.streaming ? 'true' : 'false');
    li.dataset.state = entry.streaming ? 'streaming' : 'done';
    const nodes = [];
    if (entry.used && entry.used.length) {
      nodes.push(h('p', { class: 'chips-title', text: 'Memories it used' }), citedChips(entry.used, 'cited-chip'));
    } else if (entry.done) {
      nodes.push(h('p', { class: 'muted small', text: 'It cited no memory.' }));
    }
    if (entry.recalled && entry.recalled.length) {
      nodes.push(h('details', { class: 'recalled' }, h('summary', { text: `Recalled ${entry.recalled.length} memor${entry.recalled.length === 1 ? 'y' : 'ies'} for the prompt` }), citedChips(entry.recalled, 'recalled-chip')));
    }
    if (entry.done && entry.model) nodes.push(h('p', { class: 'muted small', text: `${entry.model} · ${entry.recall_mode === 'used' ? 'strengthened what it cited' : 'strengthened what it recalled'}` }));
    fill(extra, ...nodes);
  };
  entry.render = update;
  update();
  return li;
}

async function chatPage(main, ctx) {
  const { body } = pageFrame(main, 'Chat', 'chat');
  if (needUser(body)) return;
  const about = state.about || {};
  if (about.llm === null) {
    body.append(h('div', { class: 'card notice', testid: 'chat-llm-missing' },
      h('h2', { text: 'No language model is configured' }),
      h('p', { text: 'The companion needs an OpenAI-compatible chat model. The rest of the app works without one.' }),
      h('pre', { class: 'hint-block', testid: 'llm-hint', text: about.llm_hint || 'Start the server with MEMBANK_LLM_BASE_URL and MEMBANK_LLM_MODEL set (for example http://localhost:11434/v1 and a model name), or set [llm] in the config file.' })));
    return;
  }
  if (!state.chats.has(state.user)) state.chats.set(state.user, []);
  const transcript = state.chats.get(state.user);
  const log = h('ol', { class: 'chat-log', testid: 'chat-log', 'aria-label': 'Conversation' });
  for (const entry of transcript) log.append(chatMessage(entry));
  const input = h('textarea', { id: 'chat-input', name: 'message', rows: 2, required: true, testid: 'chat-input', placeholder: `Say something to ${state.user}'s companion…` });
  const send = h('button', { type: 'submit', class: 'button primary', testid: 'chat-send' }, 'Send');
  const stop = h('button', { type: 'button', class: 'button ghost', testid: 'chat-stop', hidden: true }, 'Stop');
  const form = h('form', { class: 'chat-form', testid: 'chat-form' },
    h('label', { for: 'chat-input', text: 'Message' }),
    h('div', { class: 'chat-row' }, input, send, stop));
  let streamAbort = null;
  stop.addEventListener('click', () => streamAbort?.abort());
  input.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const message = input.value.trim();
    if (!message || streamAbort) return;
    clearError();
    const you = { role: 'you', text: message };
    const reply = { role: 'companion', text: '', streaming: true, done: false, used: [], recalled: [] };
    transcript.push(you, reply);
    log.append(chatMessage(you), chatMessage(reply));
    input.value = '';
    send.disabled = true;
    stop.hidden = false;
    streamAbort = new AbortController();
    const signal = streamAbort.signal;
    ctx.signal.addEventListener('abort', () => streamAbort?.abort());
    const scroll = () => log.lastElementChild?.scrollIntoView({ block: 'end', behavior: 'auto' });
    try {
      let response;
      try {
        response = await api('POST', userPath('/chat/stream'), { body: { message }, signal, raw: true });
      } catch (err) {
        // A server without the streaming route: ask the plain one.
        if (err instanceof ApiError && err.status === 404 && err.code === 'not_found' && /endpoint/.test(err.message)) response = null;
        else throw err;
      }
      if (response && (response.headers.get('content-type') || '').includes('text/event-stream')) {
        for await (const { event: name, data } of readEvents(response, signal)) {
          let payload;
          try { payload = JSON.parse(data); } catch { continue; }
          if (name === 'recalled') {
            reply.recalled = payload.memories || [];
          } else if (name === 'delta') {
            reply.text += payload.text || '';
          } else if (name === 'done') {
            Object.assign(reply, { text: payload.reply ?? reply.text, used: payload.used || [], recalled: payload.recalled || reply.recalled, model: payload.model, recall_mode: payload.recall_mode, done: true });
          } else if (name === 'error') {
            const e = payload.error || {};
            throw new ApiError(0, e.code || 'stream_error', e.message || 'The reply failed.');
          }
          reply.render?.();
          scroll();
        }
        if (!reply.done) throw new ApiError(0, 'stream_cut', 'The reply stream ended before it was complete.');
      } else {
        const out = response ? await response.json() : await api('POST', userPath('/chat'), { body: { message }, signal });
        Object.assign(reply, { text: out.reply, used: out.used || [], recalled: out.recalled || [], model: out.model, recall_mode: out.recall_mode, done: true });
      }
      announce('The companion replied.');
    } catch (err) {
      if (isAbort(err)) {
        reply.text += reply.text ? ' …(stopped)' : '(stopped)';
      } else {
        if (!reply.text) reply.text = '(no reply)';
        showError(err, 'Chat failed');
      }
    } finally {
      reply.streaming = false;
      reply.render?.();
      streamAbort = null;
      if (form.isConnected) {
        send.disabled = false;
        stop.hidden = true;
        input.focus();
      }
    }
  });
  const intro = about.llm && about.llm.model ? `Talking through ${about.llm.model}. Each exchange is remembered as a turn; the memories the reply cites appear under it.` : 'Each exchange is remembered as a turn; the memories the reply cites appear under it.';
  body.append(h('p', { class: 'intro', text: intro }), log, form);
  if (transcript.length === 0) log.append(h('li', { class: 'msg empty-chat muted', testid: 'chat-empty' }, 'Nothing said yet in this tab.'));
  const emptyNote = log.querySelector('[data-testid="chat-empty"]');
  form.addEventListener('submit', () => emptyNote?.remove(), { once: true });
}

// ---------------------------------------------------------------------------------------
// Summaries and portraits

const memoryCache = new Map();

async function getMemory(id, signal) {
  const key = `${state.user}/${id}`;
  if (!memoryCache.has(key)) {
    memoryCache.set(key, api('GET', userPath(`/memories/${enc(id)}`), { signal }).catch((err) => {
      memoryCache.delete(key);
      throw err;
    }));
  }
  return memoryCache.get(key);
}

function sourceLinks(ids, signal, labelFor) {
  const list = h('ul', { class: 'source-links', testid: 'source-links' });
  ids.forEach((id, i) => {
    const link = memoryLink(id, labelFor ? labelFor(id, i) : `source ${i + 1}`);
    link.dataset.testid = 'source-link';
    list.append(h('li', {}, link));
    if (!labelFor && i < 40) {
      getMemory(id, signal).then((m) => {
        link.textContent = visible(`${fmtTime(m.occurred_at)} ${snippet(m, 70)}`);
        if (m.status !== 'active') link.append(h('span', { class: 'muted', text: ` (${m.status})` }));
      }).catch(() => {});
    }
  });
  return list;
}

function derivedCard(memory, title, testid, signal, labelFor) {
  if (!memory) return h('div', { class: 'card derived empty', testid }, h('h3', { text: title }), h('p', { class: 'muted', text: 'None yet.' }));
  return h('article', { class: 'card derived', testid, 'data-id': memory.id },
    h('h3', {}, title, ' ', h('a', { href: `#/memory/${enc(memory.id)}`, class: 'small-link', text: 'details' })),
    h('p', { class: 'derived-text', text: memory.content ?? '(erased)' }),
    h('p', { class: 'muted small' }, `Made ${fmtDateTime(memory.recorded_at)}${memory.metadata?.model ? ` by ${memory.metadata.model}` : ''} from ${memory.derived_from?.length ?? 0} ${memory.derived_from?.length === 1 ? 'memory' : 'memories'}:`),
    sourceLinks(memory.derived_from || [], signal, labelFor));
}

async function summariesPage(main, ctx) {
  const { body } = pageFrame(main, 'Summaries', 'summaries', 'Each day\'s summary and personality portrait, and the overall ones made from them, with links to what they were made from.');
  if (needUser(body)) return;
  body.append(loading());
  const profile = await api('GET', userPath('/profile'), { signal: ctx.signal });
  if (!ctx.alive()) return;
  const dayOf = new Map();
  for (const d of profile.days) {
    if (d.summary) dayOf.set(d.summary.id, `${d.day} summary`);
    if (d.portrait) dayOf.set(d.portrait.id, `${d.day} portrait`);
  }
  const labelDaily = (id) => dayOf.get(id) || `memory ${shortId(id)}`;
  const nodes = [];
  if (state.about?.llm) {
    const run = h('button', { type: 'button', class: 'button', testid: 'summarize' }, 'Summarize now');
    run.addEventListener('click', async () => {
      run.disabled = true;
      clearError();
      try {
        const out = await api('POST', userPath('/summarize'), { body: {} });
        announce(`Summarized: ${out.llm_calls} model call${out.llm_calls === 1 ? '' : 's'}.`);
        render();
      } catch (err) {
        showError(err, 'Summarize failed');
        run.disabled = false;
      }
    });
    nodes.push(h('p', { class: 'toolbar' }, run, h('span', { class: 'muted small', text: ' Redoes only the days whose turns changed.' })));
  }
  const empty = !profile.global_portrait && !profile.global_summary && profile.days.length === 0;
  if (empty) {
    nodes.push(h('p', { class: 'empty', testid: 'summaries-empty' }, 'No summaries yet. They are made by ', h('code', { text: 'membank summarize' }), ' or ', h('code', { text: 'POST /v1/users/{user}/summarize' }), ' (with a language model).'));
  } else {
    nodes.push(h('section', { class: 'globals', 'aria-labelledby': 'overall-title' },
      h('h2', { id: 'overall-title', text: 'Overall' }),
      h('div', { class: 'two-col' },
        derivedCard(profile.global_portrait, 'Portrait', 'global-portrait', ctx.signal, labelDaily),
        derivedCard(profile.global_summary, 'Summary', 'global-summary', ctx.signal, labelDaily))));
    const days = [...profile.days].sort((a, b) => (a.day < b.day ? 1 : -1));
    nodes.push(h('h2', { text: 'By day' }));
    for (const d of days) {
      nodes.push(h('section', { class: 'day-summary', testid: 'day-summary', 'data-day': d.day, 'aria-label': d.day },
        h('h3', { class: 'day-heading' }, h('time', { datetime: d.day, text: fmtDay(d.day) })),
        h('div', { class: 'two-col' },
          derivedCard(d.summary, 'Summary', 'day-summary-card', ctx.signal),
          derivedCard(d.portrait, 'Portrait', 'day-portrait-card', ctx.signal))));
    }
  }
  fill(body, ...nodes);
}

// ---------------------------------------------------------------------------------------
// What will be forgotten next (dry runs)

function nextItem(entry, signal) {
  const li = h('li', { class: 'card next-item', testid: 'next-item', 'data-id': entry.id });
  const text = h('p', { class: 'next-text', testid: 'next-text' }, h('span', { class: 'muted', text: 'Loading…' }));
  const numbers = h('p', { class: 'muted small next-numbers', text: entry.numbers });
  const actions = h('div', { class: 'actions' });
  const open = h('a', { class: 'button small ghost', href: `#/memory/${enc(entry.id)}` }, 'Details');
  const pin = h('button', { type: 'button', class: 'button small', testid: 'next-pin' }, 'Pin');
  const pinned = (yes) => {
    li.dataset.pinned = String(yes);
    pin.textContent = yes ? 'Pinned ✓' : 'Pin';
    pin.disabled = yes;
    pin.setAttribute('aria-label', yes ? 'Pinned' : `Pin memory ${entry.id}`);
  };
  pin.addEventListener('click', async () => {
    pin.disabled = true;
    clearError();
    try {
      await api('POST', userPath(`/memories/${enc(entry.id)}/pin`));
      pinned(true);
      li.classList.add('saved');
      announce('Pinned: it will not be archived.');
    } catch (err) {
      pin.disabled = false;
      showError(err, 'Could not pin');
    }
  });
  pinned(false);
  actions.append(pin, open);
  li.append(text, numbers, actions);
  getMemory(entry.id, signal).then((m) => {
    fill(text, badge(KIND_LABEL[m.kind] || m.kind, 'kind'), ' ', h('time', { datetime: m.day, text: m.day }), ' ', snippet(m, 200));
    if (m.pinned) pinned(true);
  }).catch((err) => {
    fill(text, h('span', { class: 'error-text', text: `Could not read it: ${err.message}` }));
  });
  return li;
}

/** The curve's time unit in words ("days", "3-day units"), from the policy /v1/about gives. */
function unitWords() {
  const seconds = state.about?.forgetting?.unit_seconds;
  if (!seconds) return 'units';
  const days = seconds / 86400;
  if (days === 1) return 'days';
  if (Number.isInteger(days)) return `${days}-day units`;
  const hours = seconds / 3600;
  return Number.isInteger(hours) ? (hours === 1 ? 'hours' : `${hours}-hour units`) : `units of ${seconds} s`;
}

function archivedNumbers(a) {
  if (a.mode === 'fademem') return `FadeMem: age ${fmt(a.t, 2)} days, v = ${fmt(a.R, 4)} < ε = ${fmt(a.threshold, 4)}`;
  const rule = a.mode === 'threshold' ? ` < θ = ${fmt(a.threshold, 4)}` : a.mode === 'stochastic' ? ` (draw ${fmt(a.draw, 4)})` : '';
  return `t = ${fmt(a.t, 3)} ${unitWords()}, S = ${fmt(a.S, 2)}, R = ${fmt(a.R, 4)}${rule}`;
}

async function nextPage(main, ctx) {
  const { body } = pageFrame(main, 'Next to forget', 'next', 'What the next sweep and the next maintenance cycle would archive if they ran now (dry runs: nothing is changed). Pin a memory to keep it.');
  if (needUser(body)) return;
  body.append(loading());
  const [sweep, maintain] = await Promise.all([
    api('POST', userPath('/sweep'), { signal: ctx.signal, body: { dry_run: true } }).catch((err) => ({ error: err })),
    api('POST', userPath('/maintain'), { signal: ctx.signal, body: { dry_run: true } }).catch((err) => ({ error: err })),
  ]);
  if (!ctx.alive()) return;
  const refresh = h('button', { type: 'button', class: 'button', testid: 'next-refresh', onclick: () => render() }, 'Run the dry runs again');
  const sweepBox = h('section', { class: 'next-section', testid: 'next-sweep', 'aria-labelledby': 'sweep-title' }, h('h2', { id: 'sweep-title', text: 'Next sweep' }));
  if (sweep.error) {
    sweepBox.append(h('p', { class: 'error-text', text: sweep.error.message }));
    showError(sweep.error, 'Sweep dry run');
  } else {
    sweepBox.append(h('p', { class: 'muted', testid: 'sweep-summary', text: `Examined ${sweep.examined} active memories: ${sweep.archived.length} would be archived${sweep.deferred ? `, ${sweep.deferred} held back by the per-pass cap` : ''}.` }));
    sweepBox.append(sweep.archived.length
      ? h('ol', { class: 'next-list' }, sweep.archived.map((a) => nextItem({ id: a.id, numbers: archivedNumbers(a) }, ctx.signal)))
      : h('p', { class: 'empty', testid: 'sweep-empty', text: 'Nothing would be archived.' }));
  }
  const maintainBox = h('section', { class: 'next-section', testid: 'next-maintain', 'aria-labelledby': 'maintain-title' }, h('h2', { id: 'maintain-title', text: 'Next maintenance cycle' }));
  if (maintain.error) {
    maintainBox.append(h('p', { class: 'error-text', text: maintain.error.message }));
    showError(maintain.error, 'Maintenance dry run');
  } else {
    const m = maintain;
    maintainBox.append(h('p', { class: 'muted', testid: 'maintain-summary', text: `Policy ${m.policy}: examined ${m.examined}; would archive ${m.archived}, merge ${m.merged}, promote ${m.promoted}, demote ${m.demoted}${m.deferred ? `, hold back ${m.deferred}` : ''}.` }));
    const items = [
      ...m.archived_memories.map((a) => nextItem({ id: a.id, numbers: `archive: ${archivedNumbers(a)}` }, ctx.signal)),
      ...m.merges.map((g) => nextItem({ id: g.id, numbers: `merge into ${shortId(g.by)} (cosine ${fmt(g.similarity, 3)}, word overlap ${fmt(g.overlap, 2)})` }, ctx.signal)),
    ];
    maintainBox.append(items.length ? h('ol', { class: 'next-list' }, items) : h('p', { class: 'empty', testid: 'maintain-empty', text: 'Nothing would be archived or merged.' }));
    if (m.skipped && m.skipped.length) maintainBox.append(h('details', {}, h('summary', { text: `${m.skipped.length} skipped` }), h('ul', {}, m.skipped.map((s) => h('li', { text: s })))));
  }
  fill(body, h('p', { class: 'toolbar' }, refresh), sweepBox, maintainBox);
}

// ---------------------------------------------------------------------------------------
// Store overview

async function overviewPage(main, ctx) {
  const { body } = pageFrame(main, 'Overview', 'overview', 'How many of this user\'s memories were active, archived, superseded and erased at the end of each day with events (from the event log).');
  if (needUser(body)) return;
  body.append(loading());
  const out = await api('GET', userPath('/overview'), { signal: ctx.signal });
  if (!ctx.alive()) return;
  const c = out.current || {};
  const current = h('dl', { class: 'stat-row', testid: 'overview-current' }, STATUSES.map((s) => h('div', { class: `stat stat-${s}` }, h('dt', { text: s }), h('dd', { testid: `current-${s}`, text: String(c[s] ?? 0) }))));
  const chart = h('div', { class: 'chart', testid: 'overview-chart', role: 'img', 'aria-label': `Memory counts by status over ${out.days.length} days; the table below has the numbers.` });
  const table = h('table', { class: 'data-table', testid: 'overview-table' },
    h('caption', { text: `Counts at the end of each day (days in ${out.time_zone})` }),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: 'Day' }), STATUSES.map((s) => h('th', { scope: 'col', text: s })))),
    h('tbody', {}, [...out.days].reverse().map((d) => h('tr', {}, h('th', { scope: 'row', text: d.day }), STATUSES.map((s) => h('td', { text: String(d[s] ?? 0) }))))));
  fill(body, 
    h('section', { class: 'card' }, h('h2', { text: 'Now' }), current),
    h('section', { class: 'card' }, h('h2', { text: 'Over time' }), out.days.length ? chart : h('p', { class: 'empty', text: 'No events yet.' })),
    h('details', { class: 'card table-box' }, h('summary', { text: 'The numbers' }), h('div', { class: 'table-scroll' }, table)));
  if (out.days.length) overviewChart(chart, out.days);
}

const PAGE_RENDERERS = {
  memories: memoriesPage,
  memory: memoryPage,
  chat: chatPage,
  summaries: summariesPage,
  next: nextPage,
  overview: overviewPage,
};

boot().catch((err) => {
  renderSignIn();
  showError(err);
});
