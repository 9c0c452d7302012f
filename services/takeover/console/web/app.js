// Takeover operator console. Plain JavaScript, no build step, no remote
// assets. Every visible string goes through t(); chat data is inserted as
// text, never as HTML.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const API = 'api';
  const TOKEN_KEY = 'takeover.console.token';
  // PAGE: inside LangBot's sandboxed iframe (the generated page): calls go
  // through the parent's langbot:api postMessage protocol, updates come by
  // polling, and nothing touches storage, the network, pop-ups or downloads
  const PAGE = document.documentElement.dataset.transport === 'langbot';
  const POLL_MS = 4000;
  // store is localStorage in the standalone console and nothing in the page
  const store = {
    get(k) { if (PAGE) return null; try { return localStorage.getItem(k); } catch (e) { return null; } },
    set(k, v) { if (PAGE) return; try { localStorage.setItem(k, v); } catch (e) { /* private mode */ } },
  };
  const PALETTE = ['#2563eb', '#0e7490', '#be185d', '#c2410c', '#15803d', '#6d28d9', '#0f766e', '#b45309'];

  const S = {
    token: null, dead: false, info: null, lang: 'en_US', themePref: 'system',
    cat: { en_US: {}, zh_Hans: {} },
    sessions: new Map(), tab: 'all', q: '', listSeq: 0, listTimer: null,
    current: null, // the session the operator chose
    displayed: null, // {sid, gen, session, messages, ids, nextBefore, takeover, olderLoading}
    loading: false, loadSeq: 0, sending: false, suggesting: false, lastSend: new Map(), // sid -> ms of the last send (500 ms debounce)
    drafts: new Map(), // sid -> {text, image, file}
    staged: { image: null, file: null }, // {owner, dataURL, name, size}
    draftGen: 0,
    retry: new Map(), // sid -> {key, text, image, file}: a send whose outcome is unknown
    alerts: [], // trigger alerts since the page opened
    countdown: { timer: null, deadline: 0, sid: null },
    objectURLs: [],
    live: { backoff: 1000, ctrl: null, everUp: false, down: false },
    composing: false,
    settled: {},
    stick: true, // the history is scrolled to its newest entry
    page: { seq: 0, pending: new Map(), poll: null, polling: false },
    notify: { on: false, audio: null },
  };

  // ---- i18n -------------------------------------------------------------
  function t(key, vars) {
    let s = (S.cat[S.lang] && S.cat[S.lang][key]) ?? S.cat.en_US[key] ?? key;
    if (vars) s = s.replace(/\{([a-z_][a-z0-9_]*)\}/g, (m, n) => (n in vars ? String(vars[n]) : m));
    return s;
  }
  function applyI18n() {
    document.documentElement.lang = S.lang === 'zh_Hans' ? 'zh-Hans' : 'en';
    document.title = t('app.title');
    document.querySelectorAll('[data-i18n]').forEach((el) => { el.textContent = t(el.dataset.i18n); });
    document.querySelectorAll('[data-i18n-title]').forEach((el) => { el.title = t(el.dataset.i18nTitle); });
    document.querySelectorAll('[data-i18n-placeholder]').forEach((el) => { el.placeholder = t(el.dataset.i18nPlaceholder); });
    document.querySelectorAll('[data-i18n-aria]').forEach((el) => { el.setAttribute('aria-label', t(el.dataset.i18nAria)); });
  }
  async function loadCatalogs() {
    if (PAGE) {
      const c = JSON.parse($('catalogs').textContent);
      S.cat.en_US = c.en_US || {};
      S.cat.zh_Hans = c.zh_Hans || {};
      return;
    }
    for (const lang of ['en_US', 'zh_Hans']) {
      try {
        const r = await fetch('i18n/' + lang + '.json', { cache: 'no-cache' });
        if (r.ok) S.cat[lang] = await r.json();
      } catch (e) { /* falls back to en_US, then to the key */ }
    }
    // tests only: a pseudo-locale that shows each key as ⟦key⟧ (spec §12 C19)
    if (document.documentElement.dataset.hooks === 'on' && store.get('takeover.console.pseudo') === '1') {
      S.cat[S.lang] = Object.fromEntries(Object.keys(S.cat.en_US).map((k) => [k, '⟦' + k + '⟧']));
    }
  }
  function locale() { return S.lang === 'zh_Hans' ? 'zh-CN' : 'en-US'; }

  // ---- theme ------------------------------------------------------------
  const darkMQ = window.matchMedia ? window.matchMedia('(prefers-color-scheme: dark)') : null;
  function applyTheme() {
    const actual = S.themePref === 'system' ? (darkMQ && darkMQ.matches ? 'dark' : 'light') : S.themePref;
    document.documentElement.dataset.theme = actual;
  }

  // ---- API --------------------------------------------------------------
  class ApiError extends Error {
    constructor(status, code, reason, message) { super(message || code || String(status)); this.status = status; this.code = code; this.reason = reason; }
  }
  // pageCall is one langbot:api request to the parent; its answer
  // {data} or {error: "<code>[ <reason>]: <message>"} arrives as a
  // langbot:api:response message
  function pageCall(method, path, params) {
    return new Promise((resolve, reject) => {
      const requestId = 'tk-' + (++S.page.seq);
      const timer = setTimeout(() => { S.page.pending.delete(requestId); reject(new ApiError(0, 'network', '', 'timeout')); }, 45000);
      S.page.pending.set(requestId, { resolve, reject, timer });
      window.parent.postMessage({ type: 'langbot:api', requestId, endpoint: path, method, body: params || {} }, '*');
    });
  }
  function onParentMessage(ev) {
    if (ev.source !== window.parent || !ev.data || typeof ev.data !== 'object') return;
    const m = ev.data;
    if (m.type === 'langbot:api:response') {
      const p = S.page.pending.get(m.requestId);
      if (!p) return;
      S.page.pending.delete(m.requestId);
      clearTimeout(p.timer);
      if (m.error) {
        const em = /^(\d{3})(?: ([a-z_]+))?: ?([\s\S]*)$/.exec(String(m.error));
        if (em) p.reject(new ApiError(Number(em[1]), '', em[2] || '', em[3]));
        else p.reject(new ApiError(0, 'error', '', String(m.error)));
      } else p.resolve(m.data === undefined ? null : m.data);
    } else if (m.type === 'langbot:context') {
      applyContext(m);
    }
  }
  // applyContext follows LangBot's theme and language
  function applyContext(m) {
    if (m.theme === 'dark' || m.theme === 'light') { S.themePref = m.theme; applyTheme(); }
    const lang = String(m.language || '');
    const next = lang.toLowerCase().startsWith('zh') ? 'zh_Hans' : (lang ? 'en_US' : S.lang);
    if (next !== S.lang) { S.lang = next; relabel(); }
    document.documentElement.dataset.context = 'set';
  }
  async function api(method, path, params) {
    if (S.dead) throw new ApiError(401, 'unauthorized', '', '');
    if (PAGE) {
      try {
        const out = await pageCall(method, path, params);
        settle(method, path);
        return out;
      } catch (e) { settle(method, path); throw e; }
    }
    let url = API + path;
    const opt = { method, headers: { Authorization: 'Bearer ' + S.token }, cache: 'no-store' };
    if (method === 'GET') {
      const qs = new URLSearchParams();
      for (const [k, v] of Object.entries(params || {})) if (v !== undefined && v !== null && v !== '') qs.set(k, String(v));
      const q = qs.toString();
      if (q) url += '?' + q;
    } else {
      opt.headers['Content-Type'] = 'application/json';
      opt.body = JSON.stringify(params || {});
    }
    let res;
    try { res = await fetch(url, opt); } catch (e) { throw new ApiError(0, 'network', '', e.message); }
    if (res.status === 401) { authFailed(); throw new ApiError(401, 'unauthorized', '', ''); }
    if (!res.ok) {
      let body = {};
      try { body = await res.json(); } catch (e) { /* not JSON */ }
      const er = body.error || {};
      settle(method, path);
      throw new ApiError(res.status, er.code || '', er.reason || '', er.message || res.statusText);
    }
    const out = await res.json();
    settle(method, path);
    return out;
  }
  // settle counts finished calls, so tests know when a response was handled
  function settle(method, path) { const k = method + ' ' + path; S.settled[k] = (S.settled[k] || 0) + 1; }
  async function fetchBlob(sid, name) {
    if (PAGE) {
      // the page gets {mime, size, data_url}; a data URL loads nothing
      const b = await api('GET', '/blob', { sid, name });
      return { type: b.mime, size: b.size, dataURL: b.data_url, page: true };
    }
    const res = await fetch(API + '/blob?' + new URLSearchParams({ sid, name }), { headers: { Authorization: 'Bearer ' + S.token } });
    if (res.status === 401) { authFailed(); throw new ApiError(401, 'unauthorized', '', ''); }
    if (!res.ok) throw new ApiError(res.status, '', '', '');
    return res.blob();
  }
  function errText(e) {
    if (!e) return t('error.generic', { error: '' });
    if (e.reason === 'legacy_read_only') return t('error.legacy');
    if (e.reason === 'installation_inactive') return t('error.inactive');
    if (e.reason === 'in_progress' || e.reason === 'reply_in_progress') return t('error.inProgress');
    if (e.reason === 'ai_assist_off') return t('error.aiOff');
    if (e.reason === 'ai_budget') return t('error.aiBudget');
    if (e.reason === 'ai_failed') return t('error.aiFailed');
    if (e.status === 404) return t('error.notFound');
    if (e.status === 429) return t('error.rateLimited');
    if (e.status === 413) return t('error.tooLarge');
    if (e.status === 503) {
      // name the component that did not answer (issue 32): the service's
      // storage, the service itself, or LangBot (the host). A 503 without
      // a reason names its component in its message: the package's "no
      // answer from the service over NATS" on LangBot's page, or the
      // service's "at capacity"
      const detail = e.message || e.code || '';
      if (e.reason === 'storage_unavailable') return t('error.storage', { error: detail });
      if (e.reason === 'not_ready') return t('error.notReady', { error: detail });
      if (e.reason === 'send_failed' || e.reason === 'outcome_unknown') return t('error.host', { error: detail });
    }
    return t('error.generic', { error: e.message || e.code || '' });
  }
  function toastError(e) { if (!S.dead) toast(errText(e), 'error'); }

  function authFailed() {
    if (S.dead) return;
    S.dead = true;
    if (S.live.ctrl) S.live.ctrl.abort();
    stopCountdown();
    $('app').hidden = true;
    $('auth').hidden = false;
  }

  // ---- small helpers ----------------------------------------------------
  function el(tag, attrs, ...children) {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') n.className = v;
      else if (k === 'text') n.textContent = v;
      else if (k.startsWith('on')) n.addEventListener(k.slice(2), v);
      else if (k === 'dataset') Object.assign(n.dataset, v);
      else n.setAttribute(k, v === true ? '' : v);
    }
    for (const c of children) if (c !== null && c !== undefined) n.append(c);
    return n;
  }
  function hash(s) {
    let h = 0x811c9dc5;
    for (const ch of String(s || '')) { h ^= ch.codePointAt(0); h = Math.imul(h, 0x01000193) >>> 0; }
    return h;
  }
  function avatar(seed, label, group) {
    const first = Array.from(String(label || '').trim())[0] || '#';
    const a = el('span', { class: 'avatar' + (group ? ' group' : ''), text: first.toUpperCase(), 'aria-hidden': 'true' });
    a.style.background = PALETTE[hash(seed) % PALETTE.length];
    return a;
  }
  function sameDay(a, b) { return a.getFullYear() === b.getFullYear() && a.getMonth() === b.getMonth() && a.getDate() === b.getDate(); }
  function fmtTime(ms) {
    const d = new Date(ms), now = new Date();
    const time = d.toLocaleTimeString(locale(), { hour: '2-digit', minute: '2-digit', hour12: false });
    if (sameDay(d, now)) return { text: time, dated: false };
    const opts = { month: 'short', day: 'numeric' };
    if (d.getFullYear() !== now.getFullYear()) opts.year = 'numeric';
    return { text: d.toLocaleDateString(locale(), opts) + ' ' + time, dated: true };
  }
  function fmtListTime(ms) {
    if (!ms) return '';
    const d = new Date(ms);
    if (sameDay(d, new Date())) return d.toLocaleTimeString(locale(), { hour: '2-digit', minute: '2-digit', hour12: false });
    return d.toLocaleDateString(locale(), { month: 'short', day: 'numeric' });
  }
  function fmtBytes(n) { return n >= 1 << 20 ? Math.round(n / (1 << 20)) + ' MiB' : Math.round(n / 1024) + ' KiB'; }
  function fmtClock(secs) {
    secs = Math.max(0, Math.floor(secs));
    const h = Math.floor(secs / 3600), m = Math.floor((secs % 3600) / 60), s = secs % 60;
    const p = (x) => String(x).padStart(2, '0');
    return h > 0 ? h + ':' + p(m) + ':' + p(s) : p(m) + ':' + p(s);
  }
  function newKey() {
    const b = new Uint8Array(16);
    crypto.getRandomValues(b);
    return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  }
  function previewText(p) {
    if (!p || !p.kind) return '';
    if (p.kind === 'image') return t('msg.previewImage');
    if (p.kind === 'file') return t('msg.previewFile');
    if (p.kind === 'other') return t('msg.previewOther');
    return p.text || '';
  }
  // INLINE_IMAGES are the blob types shown as images (the server's list)
  const INLINE_IMAGES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);
  // safeURL admits only http(s) links and images from chat data
  function safeURL(u) { return /^https?:\/\//i.test(String(u || '')) ? String(u) : null; }
  function sessionName(s) { return (s && (s.name || s.target_id)) || ''; }
  // textDialog shows text in-page (the page cannot download): the export,
  // or a file, selectable for copying
  function textDialog(title, text, extra) {
    const ta = el('textarea', { class: 'dialog-text', readonly: true, 'data-testid': 'dialog-text', spellcheck: 'false' });
    ta.value = text;
    const card = $('card');
    card.replaceChildren(el('h3', { text: title }), extra || null, ta,
      el('div', { class: 'card-actions' },
        el('button', { class: 'btn', text: t('dialog.selectAll'), onclick: () => { ta.focus(); ta.select(); } }),
        el('button', { class: 'btn', 'data-testid': 'dialog-close', text: t('card.close'), onclick: closeCard })));
    card.dataset.testid = 'text-dialog';
    card.classList.add('wide');
    $('cardOverlay').hidden = false;
  }
  function downloadJSON(obj, filename) {
    if (PAGE) { textDialog(filename, JSON.stringify(obj, null, 2)); return; }
    const url = URL.createObjectURL(new Blob([JSON.stringify(obj, null, 2)], { type: 'application/json' }));
    const a = el('a', { href: url, download: filename });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  }

  // ---- toasts -----------------------------------------------------------
  function toast(text, kind) {
    const box = $('toasts');
    const n = el('div', { class: 'toast' + (kind ? ' ' + kind : ''), 'data-testid': 'toast', 'data-kind': kind || 'info', text });
    box.append(n);
    while (box.children.length > 3) box.firstElementChild.remove();
    setTimeout(() => n.remove(), 3000);
  }

  // ---- session list -----------------------------------------------------
  async function loadList() {
    const seq = ++S.listSeq;
    let res;
    try { res = await api('GET', '/sessions', { limit: 500 }); } catch (e) { if (seq === S.listSeq) toastError(e); return; }
    if (seq !== S.listSeq) return;
    S.sessions = new Map(res.sessions.map((s) => [s.sid, s]));
    renderList();
    renderAlerts();
  }
  function scheduleListReload() {
    clearTimeout(S.listTimer);
    S.listTimer = setTimeout(loadList, 300);
  }
  function sortedSessions() {
    return Array.from(S.sessions.values()).sort((a, b) => (b.last_msg_at || 0) - (a.last_msg_at || 0) || (a.sid < b.sid ? -1 : 1));
  }
  function renderList() {
    const ul = $('sessionList');
    const q = S.q.toLowerCase();
    const items = sortedSessions().filter((s) => {
      if (S.tab !== 'all' && s.type !== S.tab) return false;
      if (!q) return true;
      return [s.name, s.target_id, s.bot_name].some((v) => (v || '').toLowerCase().includes(q));
    });
    ul.replaceChildren(...items.map(renderItem));
    $('listEmpty').hidden = items.length > 0;
  }
  function renderItem(s) {
    const active = !!(s.takeover && s.takeover.active);
    const li = el('li', {
      class: 'session' + (s.sid === S.current ? ' active' : ''), 'data-testid': 'session-item',
      dataset: { sid: s.sid, unread: String(!!s.unread), active: String(active), current: String(s.sid === S.current) },
      onclick: () => openSession(s.sid),
    });
    if (s.error) {
      li.append(avatar(s.sid, '!', false), el('div', { class: 's-body' }, el('div', { class: 's-preview', text: t('list.unreadable') })));
      return li;
    }
    const av = avatar(s.target_id, sessionName(s), s.type === 'group');
    if (s.unread) av.append(el('span', { class: 'dot', title: t('list.unhandled', { word: s.triggered_word || '' }) }));
    const line1 = el('div', { class: 's-line' },
      el('span', { class: 's-name' + (s.unread ? ' unread' : ''), text: sessionName(s) }),
      s.type === 'group' ? el('span', { class: 'badge', text: t('list.groupBadge') }) : null,
      s.legacy ? el('span', { class: 'badge', text: t('list.legacy') }) : null,
      active ? el('span', { class: 'live-dot', title: t('list.takenOver'), 'aria-label': t('list.takenOver') }) : null,
      el('span', { class: 's-time', text: fmtListTime(s.last_msg_at) }));
    const bot = el('div', { class: 's-bot', text: (s.bot_name || t('list.unknownBot')) + (s.adapter ? ' · ' + s.adapter : '') });
    const prev = el('div', { class: 's-preview', text: previewText(s.last_msg_preview) });
    li.append(av, el('div', { class: 's-body' }, line1, bot, prev));
    return li;
  }
  function updateSummaryTakeover(sid, tv) {
    const s = S.sessions.get(sid);
    if (s && tv) { s.takeover = tv; renderList(); }
  }

  // ---- alerts -----------------------------------------------------------
  function alertEntries() {
    const out = [...S.alerts];
    const seen = new Set(out.map((a) => a.sid));
    for (const s of sortedSessions()) if (s.unread && !seen.has(s.sid)) out.push({ sid: s.sid, name: sessionName(s), word: s.triggered_word, at: s.last_msg_at });
    return out.filter((a) => S.sessions.has(a.sid));
  }
  function renderAlerts() {
    const list = alertEntries();
    const c = $('alertCount');
    c.hidden = list.length === 0;
    c.textContent = String(list.length);
    $('alertItems').replaceChildren(...list.map((a) => el('li', { 'data-sid': a.sid, onclick: () => { $('alertPanel').hidden = true; openSession(a.sid); } },
      el('span', { text: a.name }), el('small', { text: (a.word ? a.word + ' · ' : '') + fmtListTime(a.at) }))));
    $('alertEmpty').hidden = list.length > 0;
  }

  // ---- drafts and attachments --------------------------------------------
  function saveDraft(sid) {
    if (!sid) return;
    S.drafts.set(sid, { text: $('msgInput').value, image: S.staged.image, file: S.staged.file });
  }
  function restoreDraft(sid) {
    const d = S.drafts.get(sid) || {};
    $('msgInput').value = d.text || '';
    S.staged.image = d.image || null;
    S.staged.file = d.file || null;
    renderPreview();
  }
  function renderPreview() {
    const strip = $('previewStrip');
    const chips = [];
    for (const kind of ['image', 'file']) {
      const a = S.staged[kind];
      if (!a) continue;
      const chip = el('div', { class: 'chip', dataset: { kind, name: a.name, owner: a.owner } },
        kind === 'image' ? el('img', { src: a.dataURL, alt: a.name }) : null,
        el('span', { text: a.name }),
        el('button', { title: t('composer.remove'), 'aria-label': t('composer.remove'), text: '×', onclick: () => { S.staged[kind] = null; renderPreview(); } }));
      chips.push(chip);
    }
    strip.replaceChildren(...chips);
  }
  const hooks = {
    readFile(file) {
      return new Promise((resolve, reject) => {
        const r = new FileReader();
        r.onload = () => resolve(r.result);
        r.onerror = () => reject(r.error);
        r.readAsDataURL(file);
      });
    },
  };
  function pickAttachment(kind, file) {
    if (!file || !S.current) return;
    const sid = S.current, gen = S.draftGen;
    const limit = (S.info && S.info.limits && S.info.limits.attachment_bytes) || 10 << 20;
    if (file.size > limit) { toast(t('composer.tooLarge', { limit: fmtBytes(limit) }), 'error'); return; }
    Promise.resolve(hooks.readFile(file)).then((dataURL) => {
      // a read that completes after a switch is discarded (invariant 6)
      if (S.current !== sid || S.draftGen !== gen) return;
      S.staged[kind] = { owner: sid, dataURL, name: file.name, size: file.size };
      renderPreview();
    }).catch(() => {});
  }

  // ---- conversation -----------------------------------------------------
  function revokeObjectURLs() {
    for (const u of S.objectURLs) URL.revokeObjectURL(u);
    S.objectURLs = [];
  }
  function blankConversation() {
    revokeObjectURLs();
    $('chatTitle').textContent = '';
    $('messages').replaceChildren();
    $('infoPanel').replaceChildren();
    $('handledBtn').hidden = true;
    renderTakeover();
  }
  function closeConversation() {
    S.current = null;
    S.displayed = null;
    S.loading = false;
    S.loadSeq++;
    S.draftGen++;
    $('msgInput').value = '';
    S.staged.image = S.staged.file = null;
    renderPreview();
    blankConversation();
    $('chatHeader').hidden = $('messages').hidden = $('composer').hidden = true;
    $('infoPanel').hidden = true;
    $('chatEmpty').hidden = false;
    $('app').classList.remove('in-chat');
    updateComposer();
    renderList();
  }
  function openSession(sid) {
    if (!sid || S.dead) return;
    const prev = S.current;
    if (prev !== sid) saveDraft(prev);
    S.current = sid;
    const seq = ++S.loadSeq;
    S.displayed = null;
    S.loading = true;
    S.draftGen++;
    if (prev !== sid) restoreDraft(sid);
    blankConversation();
    $('chatEmpty').hidden = true;
    $('app').classList.add('in-chat'); // narrow screens show the conversation instead of the list
    $('chatHeader').hidden = $('messages').hidden = $('composer').hidden = false;
    updateComposer();
    renderList();
    loadMessages(sid, seq);
  }
  async function loadMessages(sid, seq) {
    try {
      const page = await api('GET', '/messages', { sid, limit: 50 });
      // a response for a session that is no longer current never changes the screen (invariant 1)
      if (seq !== S.loadSeq || S.current !== sid) return;
      const msgs = page.messages.slice().reverse();
      S.displayed = { sid, gen: page.session.gen, session: page.session, messages: msgs, ids: new Set(msgs.map((m) => m.id)), nextBefore: page.next_before || 0, takeover: page.session.takeover, olderLoading: false };
      const s = S.sessions.get(sid);
      S.sessions.set(sid, Object.assign({}, s || {}, page.session));
      renderConversation();
      renderList();
    } catch (e) {
      if (seq === S.loadSeq && S.current === sid) toastError(e);
    } finally {
      if (seq === S.loadSeq) { S.loading = false; updateComposer(); }
    }
  }
  function renderConversation() {
    const d = S.displayed;
    $('chatTitle').textContent = sessionName(d.session);
    $('handledBtn').hidden = !d.session.unread || d.session.legacy;
    renderMessages(true);
    renderInfo();
    renderTakeover();
    renderRelay();
    updateComposer();
  }
  function renderMessages(scrollToEnd) {
    const d = S.displayed;
    const box = $('messages');
    revokeObjectURLs();
    const nodes = [el('div', { class: 'hist-note', id: 'histNote', text: d.nextBefore ? '' : t('chat.historyStart') })];
    for (const m of d.messages) nodes.push(renderEntry(m));
    box.replaceChildren(...nodes);
    if (scrollToEnd) { box.scrollTop = box.scrollHeight; S.stick = true; }
  }
  // keepAtEnd scrolls to the newest entry when the operator was there before
  // something (an image) grew the history
  function keepAtEnd() { if (S.stick) { const box = $('messages'); box.scrollTop = box.scrollHeight; } }
  function renderEntry(m) {
    const d = S.displayed;
    const out = m.role !== 'user';
    const row = el('div', { class: 'row ' + m.role + (out ? ' out' : ''), 'data-testid': 'message', dataset: { id: m.id, role: m.role } });
    let av, who = '';
    if (m.role === 'user') {
      const group = d.session.type === 'group';
      av = avatar(m.sender_id || d.session.target_id, m.sender_name || sessionName(d.session), false);
      if (group) {
        who = m.sender_name || m.sender_id;
        if (m.sender_id) { av.dataset.member = m.sender_id; av.addEventListener('click', () => openCard('user', m.sender_id)); }
      }
    } else if (m.role === 'ai') { av = avatar('ai', t('msg.ai')); who = t('msg.ai'); }
    else if (m.role === 'human') { av = avatar('op:' + m.operator, m.operator || t('msg.ai')); who = t('msg.operator', { operator: m.operator || '' }); }
    else { av = avatar('notice', t('msg.notice')); who = t('msg.notice'); }
    const bubble = el('div', { class: 'bubble' });
    for (const p of m.parts || []) bubble.append(renderPart(d.sid, p));
    if (m.truncated) bubble.append(el('span', { class: 'other', text: ' ' + t('msg.truncated') }));
    const tm = fmtTime(m.ts);
    row.append(av, el('div', { class: 'bubble-wrap' },
      who ? el('span', { class: 'who', text: who }) : null, bubble,
      el('span', { class: 'time', 'data-testid': 'msg-time', dataset: { dated: String(tm.dated) }, text: tm.text })));
    return row;
  }
  function renderPart(sid, p) {
    if (p.type === 'text') return el('span', { text: p.text || '' });
    if (p.omitted) return el('div', { class: 'missing', text: t('msg.attachmentMissing') });
    if (p.type === 'image') {
      const img = el('img', { alt: t('msg.previewImage'), 'data-testid': 'msg-image' });
      if (p.url) {
        const src = safeURL(p.url);
        if (!src) return el('div', { class: 'missing', text: t('msg.attachmentMissing') });
        // the page makes no request of its own: a remote image is its address
        if (PAGE) return el('div', { class: 'other', text: t('msg.remoteImage', { url: src }) });
        // a remote image is never loaded by the page (the policy allows no
        // remote image origin): fetching it tells its server who reads the
        // chat and when. The operator may open it in a tab of its own, with
        // no referrer and no handle on this page.
        return el('div', {}, el('a', { href: src, target: '_blank', rel: 'noopener noreferrer', class: 'remote-image',
          'data-testid': 'remote-image', text: t('msg.loadRemoteImage') }));
      }
      else if (p.blob) {
        const gen = S.displayed && S.displayed.gen;
        fetchBlob(sid, p.blob).then((b) => {
          if (!S.displayed || S.displayed.sid !== sid || S.displayed.gen !== gen) return;
          // only an allow-listed raster type becomes an object URL: a blob
          // URL is of the console's origin, so a document opened from one
          // (new tab) would run with the operator's token at hand
          if (!INLINE_IMAGES.has(b.type)) throw new Error('not an inline image');
          if (b.page) {
            img.addEventListener('load', () => { img.dataset.loaded = 'true'; keepAtEnd(); }, { once: true });
            img.src = b.dataURL;
            return;
          }
          const u = URL.createObjectURL(new Blob([b], { type: b.type }));
          S.objectURLs.push(u);
          img.addEventListener('load', () => { img.dataset.loaded = 'true'; keepAtEnd(); }, { once: true });
          img.src = u;
        }).catch(() => img.replaceWith(el('div', { class: 'missing', text: t('msg.attachmentMissing') })));
      }
      return el('div', {}, img);
    }
    if (p.type === 'file') {
      const name = p.name || t('msg.previewFile');
      if (p.url) {
        const href = safeURL(p.url);
        if (PAGE) return el('div', { class: 'other', text: name + ' · ' + (href || '') });
        return href ? el('div', {}, el('a', { class: 'file', href, target: '_blank', rel: 'noopener noreferrer', text: name })) : el('div', { class: 'missing', text: name });
      }
      const a = el('a', { class: 'file', href: '#', 'data-testid': 'msg-file', text: name });
      a.addEventListener('click', (ev) => {
        ev.preventDefault();
        fetchBlob(sid, p.blob).then((b) => {
          if (b.page) {
            const info = el('p', { class: 'muted', text: t('dialog.fileInfo', { name, size: fmtBytes(b.size || 0), mime: b.type || '' }) });
            const comma = b.dataURL.indexOf(',');
            let text = b.dataURL;
            // text files are shown as text, anything else as its data URL
            if (/^text\/|json|xml/.test(b.type || '') && comma > 0) {
              try { text = new TextDecoder().decode(Uint8Array.from(atob(b.dataURL.slice(comma + 1)), (c) => c.charCodeAt(0))); } catch (e) { /* keep the data URL */ }
            }
            textDialog(name, text, info);
            return;
          }
          // a neutral type: opened rather than saved, it still downloads
          const u = URL.createObjectURL(new Blob([b], { type: 'application/octet-stream' }));
          const dl = el('a', { href: u, download: name });
          document.body.append(dl);
          dl.click();
          dl.remove();
          setTimeout(() => URL.revokeObjectURL(u), 10000);
        }).catch(() => toast(t('msg.attachmentMissing'), 'error'));
      });
      return el('div', {}, a);
    }
    return el('div', { class: 'other', text: t('msg.component', { component: p.component || p.type || '' }) });
  }
  function addEntry(m) {
    const d = S.displayed;
    if (!d || d.ids.has(m.id)) return;
    d.ids.add(m.id);
    d.messages.push(m);
    const box = $('messages');
    const atEnd = box.scrollHeight - box.scrollTop - box.clientHeight < 80;
    box.append(renderEntry(m));
    if (atEnd || m.role === 'human') { box.scrollTop = box.scrollHeight; S.stick = true; }
  }
  async function loadOlder() {
    const d = S.displayed;
    if (!d || !d.nextBefore || d.olderLoading) return;
    d.olderLoading = true;
    const sid = d.sid, gen = d.gen;
    $('histNote').textContent = t('chat.loadingOlder');
    try {
      const page = await api('GET', '/messages', { sid, before: d.nextBefore, limit: 50 });
      if (S.displayed !== d || S.current !== sid || page.session.gen !== gen) return;
      const older = page.messages.slice().reverse().filter((m) => !d.ids.has(m.id));
      older.forEach((m) => d.ids.add(m.id));
      d.messages = older.concat(d.messages);
      d.nextBefore = page.next_before || 0;
      const box = $('messages');
      const fromEnd = box.scrollHeight - box.scrollTop;
      renderMessages(false);
      box.scrollTop = box.scrollHeight - fromEnd;
    } catch (e) {
      if (S.displayed === d) toastError(e);
    } finally {
      d.olderLoading = false;
      const n = $('histNote');
      if (n && S.displayed === d) n.textContent = d.nextBefore ? '' : t('chat.historyStart');
    }
  }
  function renderInfo() {
    const d = S.displayed, s = d.session, panel = $('infoPanel');
    const rows = el('div', { class: 'info-rows' },
      el('div', {}, el('span', { text: t('info.key') }), el('span', { text: s.session_key })),
      el('div', {}, el('span', { text: t('info.bot') }), el('span', { text: s.bot_name || t('list.unknownBot') })),
      el('div', {}, el('span', { text: t('info.adapter') }), el('span', { text: s.adapter || '' })));
    const head = el('div', { class: 'info-head' }, avatar(s.target_id, sessionName(s), s.type === 'group'),
      el('h3', { text: sessionName(s) }), el('div', { class: 'muted', text: t(s.type === 'group' ? 'info.group' : 'info.person') + ' · ' + s.target_id }));
    const parts = [head, rows];
    if (s.legacy) parts.push(el('p', { class: 'legacy-note', text: t('chat.legacyNotice') }));
    if (s.type === 'group') {
      const members = s.members || [];
      parts.push(el('div', { class: 'members' }, el('h4', { text: t('info.members', { count: members.length }) }),
        el('ul', {}, ...members.map((m) => el('li', { onclick: () => openCard('user', m.id) }, avatar(m.id, m.name || m.id), el('span', { text: m.name || m.id }))))));
    }
    const sat = s.satisfaction;
    if (sat && (sat.score > 0 || sat.until > Date.now())) {
      rows.append(el('div', { 'data-testid': 'rating' }, el('span', { text: t('info.rating') }),
        el('span', { text: sat.score > 0 ? t('info.ratingScore', { score: sat.score }) : t('info.ratingWaiting') })));
    }
    parts.push(renderNotesBox(d));
    panel.replaceChildren(...parts);
    loadNotes(d);
  }

  // ---- internal notes (operators only, never sent) ----------------------
  function renderNotesBox(d) {
    const input = el('textarea', { id: 'noteInput', rows: '2', 'data-testid': 'note-input', placeholder: t('notes.placeholder'), 'aria-label': t('notes.placeholder') });
    const add = el('button', { class: 'btn', 'data-testid': 'note-add', text: t('notes.add'), disabled: !!d.session.legacy });
    add.addEventListener('click', () => addNote(d, input));
    return el('div', { class: 'notes', 'data-testid': 'notes' }, el('h4', { text: t('notes.title') }),
      el('ul', { id: 'noteList', 'data-testid': 'note-list' }), input, add);
  }
  function renderNotes(d, notes) {
    const list = $('noteList');
    if (!list || S.displayed !== d) return;
    if (!notes.length) { list.replaceChildren(el('li', { class: 'muted', text: t('notes.empty') })); return; }
    list.replaceChildren(...notes.map((n) => {
      const del = el('button', { class: 'icon-btn note-del', 'data-testid': 'note-del', title: t('notes.delete'), 'aria-label': t('notes.delete'), text: '×' });
      del.addEventListener('click', () => deleteNote(d, n.id));
      return el('li', { 'data-testid': 'note', dataset: { id: n.id } },
        el('span', { class: 'note-text', text: n.text }),
        el('span', { class: 'muted note-meta', text: t('notes.meta', { operator: n.operator, time: fmtTime(n.at).text }) }), del);
    }));
  }
  async function loadNotes(d) {
    try {
      const r = await api('GET', '/notes', { sid: d.sid });
      renderNotes(d, r.notes || []);
    } catch (e) { if (S.displayed === d) toastError(e); }
  }
  async function addNote(d, input) {
    const text = input.value.trim();
    if (!text) return;
    try {
      const r = await api('POST', '/notes', { sid: d.sid, text });
      if (S.displayed === d) input.value = '';
      renderNotes(d, r.notes || []);
    } catch (e) { toastError(e); }
  }
  async function deleteNote(d, id) {
    try {
      const r = await api('DELETE', '/notes', { sid: d.sid, id });
      renderNotes(d, r.notes || []);
    } catch (e) { toastError(e); }
  }

  // ---- canned replies (the installation's, picked into the composer) ----
  async function openCanned() {
    let r;
    try { r = await api('GET', '/canned', {}); } catch (e) { toastError(e); return; }
    renderCanned(r.replies || []);
    $('cardOverlay').hidden = false;
  }
  function renderCanned(replies) {
    const card = $('card');
    const items = replies.map((c) => {
      const use = el('button', { class: 'canned-use', 'data-testid': 'canned-item', dataset: { name: c.name }, title: t('canned.insert') },
        el('strong', { text: '/' + c.name }), el('span', { class: 'muted', text: c.text }));
      use.addEventListener('click', () => insertCanned(c.text));
      const del = el('button', { class: 'icon-btn', 'data-testid': 'canned-del', title: t('canned.delete'), 'aria-label': t('canned.delete'), text: '×' });
      del.addEventListener('click', async () => {
        try { const x = await api('DELETE', '/canned', { name: c.name }); renderCanned(x.replies || []); } catch (e) { toastError(e); }
      });
      return el('li', {}, use, del);
    });
    const name = el('input', { id: 'cannedName', 'data-testid': 'canned-name', placeholder: t('canned.name'), 'aria-label': t('canned.name') });
    const text = el('textarea', { id: 'cannedText', rows: '3', 'data-testid': 'canned-text', placeholder: t('canned.text'), 'aria-label': t('canned.text') });
    const save = el('button', { class: 'btn primary', 'data-testid': 'canned-save', text: t('canned.save') });
    save.addEventListener('click', async () => {
      try { const x = await api('POST', '/canned', { name: name.value.trim(), text: text.value }); renderCanned(x.replies || []); } catch (e) { toastError(e); }
    });
    card.replaceChildren(el('h3', { text: t('canned.title') }),
      el('ul', { class: 'canned-list', 'data-testid': 'canned-list' }, ...(items.length ? items : [el('li', { class: 'muted', text: t('canned.empty') })])),
      el('div', { class: 'canned-form' }, name, text, save),
      el('div', { class: 'card-actions' }, el('button', { class: 'btn', text: t('card.close'), onclick: closeCard })));
    card.dataset.testid = 'canned-dialog';
    card.classList.add('wide');
  }
  function insertCanned(text) {
    const input = $('msgInput');
    input.value = text;
    input.dispatchEvent(new Event('input'));
    closeCard();
    updateComposer();
    input.focus();
  }

  // ---- the AI's suggested reply (ai_assist) ------------------------------
  // POST /suggest is the service path of `!ho suggest N`; the draft goes
  // into the reply box of the chat it was asked for, never sent by itself
  async function suggestReply() {
    const d = S.displayed, sid = S.current;
    if (!d || d.sid !== sid || S.loading || S.suggesting || S.dead) return;
    S.suggesting = true;
    updateComposer();
    try {
      const r = await api('POST', '/suggest', { sid });
      if (S.current === sid && S.displayed === d) {
        const input = $('msgInput');
        input.value = r.text || '';
        input.dispatchEvent(new Event('input'));
        input.focus();
      }
    } catch (e) { toastError(e); }
    finally {
      S.suggesting = false;
      updateComposer();
    }
  }

  // ---- takeover ---------------------------------------------------------
  function renderTakeover() {
    const d = S.displayed;
    const btn = $('takeoverBtn');
    const on = !!(d && d.takeover && d.takeover.active);
    btn.dataset.state = on ? 'on' : 'off';
    btn.textContent = t(on ? 'chat.release' : 'chat.takeover');
    btn.className = 'btn ' + (on ? 'danger' : 'primary');
    btn.disabled = !d || d.sid !== S.current || !!d.session.legacy;
    if (on) startCountdown(d.sid, d.takeover.remaining);
    else stopCountdown();
    renderTip();
  }
  // renderRelay shows the operator chats relaying the displayed chat (takeover
  // relay mode), in the words of `!ho show N`: "Relayed to: private chat 77"
  function renderRelay() {
    const d = S.displayed, badge = $('relayBadge');
    const places = (d && d.sid === S.current && d.session.relayed_to) || [];
    badge.hidden = !places.length;
    badge.textContent = places.length ? t('chat.relayedTo', {
      where: places.map((p) => t('chat.relayPlace', { kind: t(p.type === 'group' ? 'chat.relayGroup' : 'chat.relayPerson'), id: p.id })).join(t('chat.relaySep')),
    }) : '';
  }
  function renderTip() {
    const d = S.displayed, tip = $('composerTip');
    tip.className = 'tip';
    if (!d) { tip.textContent = ''; return; }
    if (d.session.legacy) { tip.textContent = t('chat.legacyNotice'); tip.classList.add('warn'); return; }
    if (d.takeover && d.takeover.active) { tip.textContent = t('composer.tipTakenOver'); tip.classList.add('on'); return; }
    if (S.info && S.info.config && S.info.config.takeover_on_reply) { tip.textContent = t('composer.tipWillTakeOver'); return; }
    tip.textContent = t('composer.tipAiActive');
    tip.classList.add('warn');
  }
  function startCountdown(sid, remaining) {
    stopCountdown();
    S.countdown.sid = sid;
    S.countdown.deadline = Date.now() + remaining * 1000;
    const cd = $('countdown');
    cd.hidden = false;
    const tick = () => {
      const left = Math.ceil((S.countdown.deadline - Date.now()) / 1000);
      const text = fmtClock(left);
      $('countdownText').textContent = text;
      cd.setAttribute('aria-label', t('chat.countdown', { time: text }));
      cd.classList.toggle('warning', left <= 60);
      if (left <= 0) countdownEnded(sid);
    };
    tick();
    S.countdown.timer = setInterval(tick, 1000);
  }
  function stopCountdown() {
    clearInterval(S.countdown.timer);
    S.countdown.timer = null;
    S.countdown.sid = null;
    const cd = $('countdown');
    cd.hidden = true;
    cd.classList.remove('warning');
  }
  async function countdownEnded(sid) {
    stopCountdown();
    const d = S.displayed;
    if (!d || d.sid !== sid) return;
    d.takeover = Object.assign({}, d.takeover, { active: false, remaining: 0 });
    renderTakeover();
    try {
      const tv = await api('GET', '/takeover_status', { sid });
      if (S.displayed === d && S.current === sid) {
        d.takeover = tv;
        renderTakeover();
        if (!tv.active) toast(t('toast.autoReleased'), 'warn');
      }
      updateSummaryTakeover(sid, tv);
    } catch (e) { /* the live feed or the next resync corrects it */ }
  }
  async function toggleTakeover() {
    const d = S.displayed;
    if (!d || d.sid !== S.current || S.loading || d.session.legacy) return;
    const sid = d.sid;
    const on = !!(d.takeover && d.takeover.active);
    $('takeoverBtn').disabled = true;
    try {
      const tv = await api(on ? 'DELETE' : 'POST', '/takeover', { sid });
      // only the session the request was for, and only while it is displayed (invariant 4)
      if (S.displayed === d && S.current === sid) { d.takeover = tv; renderTakeover(); }
      updateSummaryTakeover(sid, tv);
      toast(t(on ? 'toast.released' : 'toast.takenOver'));
    } catch (e) {
      if (S.current === sid) toastError(e);
    } finally {
      if (S.displayed === d && S.current === sid) $('takeoverBtn').disabled = !!d.session.legacy;
    }
  }
  async function refreshStatus() {
    const d = S.displayed;
    if (!d) return;
    const sid = d.sid;
    try {
      const tv = await api('GET', '/takeover_status', { sid });
      if (S.displayed === d && S.current === sid) { d.takeover = tv; renderTakeover(); }
      updateSummaryTakeover(sid, tv);
    } catch (e) { /* best effort */ }
  }

  // ---- sending ----------------------------------------------------------
  function updateComposer() {
    const d = S.displayed;
    const ready = !!(d && d.sid === S.current && !S.loading);
    const legacy = !!(d && d.session.legacy);
    $('sendBtn').disabled = !ready || S.sending || legacy;
    $('msgInput').disabled = legacy;
    $('imageBtn').disabled = $('fileBtn').disabled = legacy;
    // the AI's suggested reply, when the installation enabled ai_assist
    $('suggestBtn').hidden = !(S.info && S.info.config && S.info.config.ai_assist);
    $('suggestBtn').disabled = !ready || legacy || S.suggesting;
  }
  function consumeSent(sid, raw, image, file) {
    // remove only what was sent, from the session it was sent from (invariants 9, 10)
    if (S.current === sid) {
      if ($('msgInput').value === raw) $('msgInput').value = '';
      if (image && S.staged.image === image) S.staged.image = null;
      if (file && S.staged.file === file) S.staged.file = null;
      renderPreview();
    } else {
      const d = S.drafts.get(sid);
      if (!d) return;
      if (d.text === raw) d.text = '';
      if (image && d.image === image) d.image = null;
      if (file && d.file === file) d.file = null;
    }
  }
  async function sendMessage() {
    const sid = S.current;
    if (!sid || S.sending || S.dead) return;
    const d = S.displayed;
    // a reply targets the displayed session, and nothing is sent while loading (invariant 3)
    if (S.loading || !d || d.sid !== sid) { toast(t('composer.notReady')); return; }
    if (d.session.legacy) return;
    const now = Date.now();
    if (now - (S.lastSend.get(sid) || 0) < 500) return;
    const raw = $('msgInput').value;
    const text = raw.trim();
    // only attachments owned by the target session (invariant 8)
    const image = S.staged.image && S.staged.image.owner === sid ? S.staged.image : null;
    const file = S.staged.file && S.staged.file.owner === sid ? S.staged.file : null;
    if (!text && !image && !file) return;
    S.lastSend.set(sid, now);
    const r = S.retry.get(sid);
    const key = r && r.text === text && r.image === image && r.file === file ? r.key : newKey();
    S.sending = true;
    updateComposer();
    try {
      const res = await api('POST', '/reply', {
        sid, idempotency_key: key, text,
        image_base64: image ? image.dataURL : '', file_base64: file ? file.dataURL : '', file_name: file ? file.name : '',
      });
      S.retry.delete(sid);
      consumeSent(sid, raw, image, file);
      if (!res.saved) toast(t('toast.sentNotSaved'), 'warn');
      // a late result never touches another session's controls (invariant 5)
      if (S.displayed === d && S.current === sid) {
        if (res.takeover) { d.takeover = res.takeover; renderTakeover(); }
        if (res.entry) addEntry(res.entry);
      }
      updateSummaryTakeover(sid, res.takeover);
      scheduleListReload();
    } catch (e) {
      // in the page a lost answer, or a 503 from an older package that
      // passes no reason, also keeps the key: reusing it after a definite
      // failure is safe too (spec §7.4 rule 2)
      if (e.reason === 'outcome_unknown' || (PAGE && (e.status === 503 || e.status === 0))) {
        S.retry.set(sid, { key, text, image, file });
        toast(t('toast.sendUnknown'), 'warn');
      } else if (!S.dead) {
        S.retry.delete(sid);
        toast(t('toast.sendFailed', { error: errText(e) }), 'error');
      }
    } finally {
      S.sending = false;
      updateComposer();
    }
  }

  // ---- cards and dialogs -------------------------------------------------
  async function openCard(kind, memberID) {
    const d = S.displayed;
    if (!d) return;
    const sid = d.sid;
    let c;
    try {
      c = kind === 'group' ? await api('GET', '/group_info', { sid }) : await api('GET', '/user_info', { sid, member_id: memberID || '' });
    } catch (e) { toastError(e); return; }
    if (S.current !== sid) return;
    const row = (label, value) => (value === undefined || value === null || value === '' || value === false ? null
      : el('div', {}, el('span', { text: t(label) }), el('span', { text: String(value) })));
    const rows = kind === 'group'
      ? [row('card.groupId', c.id), row('card.memberCount', c.member_count), row('card.bot', c.bot_name || t('list.unknownBot')), row('card.adapter', c.adapter)]
      : [row('card.id', c.id), c.from_group ? row('card.fromGroup', sessionName(d.session)) : null, c.from_group ? row('card.groupId', c.group_id) : null,
        row('card.bot', c.bot_name || t('list.unknownBot')), row('card.adapter', c.adapter)];
    const card = $('card');
    card.replaceChildren(avatar(c.id, c.name || c.id, kind === 'group'), el('h3', { class: 'center', text: c.name || c.id }),
      el('div', { class: 'sub', text: t(kind === 'group' ? 'card.group' : 'card.user') }),
      el('div', { class: 'info-rows' }, ...rows),
      el('div', { class: 'card-actions' }, el('button', { class: 'btn', text: t('card.close'), onclick: closeCard })));
    card.dataset.testid = 'card';
    card.classList.remove('wide');
    $('cardOverlay').hidden = false;
  }
  function closeCard() { $('cardOverlay').hidden = true; $('card').classList.remove('wide'); }
  function confirmDialog(message) {
    return new Promise((resolve) => {
      $('confirmMsg').textContent = message;
      $('confirmOverlay').hidden = false;
      const done = (v) => { $('confirmOverlay').hidden = true; $('confirmOk').onclick = $('confirmCancel').onclick = $('confirmOverlay').onclick = null; resolve(v); };
      $('confirmOk').onclick = () => done(true);
      $('confirmCancel').onclick = () => done(false);
      $('confirmOverlay').onclick = (ev) => { if (ev.target === $('confirmOverlay')) done(false); };
    });
  }
  async function markHandled() {
    const d = S.displayed;
    if (!d) return;
    const sid = d.sid;
    try {
      const sum = await api('POST', '/mark_handled', { sid });
      S.sessions.set(sid, Object.assign({}, S.sessions.get(sid) || {}, sum));
      S.alerts = S.alerts.filter((a) => a.sid !== sid);
      if (S.displayed === d) { d.session.unread = false; $('handledBtn').hidden = true; }
      renderList();
      renderAlerts();
      toast(t('toast.handled'));
    } catch (e) { toastError(e); }
  }
  async function exportSession() {
    const d = S.displayed;
    if (!d) return;
    try {
      let x;
      try {
        x = await api('GET', '/export', { sid: d.sid, inline_blobs: true });
      } catch (e) {
        if (e.status !== 413) throw e;
        x = await api('GET', '/export', { sid: d.sid }); // attachments too large to inline: names only
      }
      downloadJSON(x, 'takeover-' + d.sid.slice(0, 12) + '.json');
    } catch (e) { toastError(e); }
  }
  async function deleteSession() {
    const d = S.displayed;
    if (!d) return;
    if (!(await confirmDialog(t('confirm.delete', { name: sessionName(d.session) })))) return;
    try {
      await api('DELETE', '/session', { sid: d.sid });
      forget(d.sid);
      toast(t('toast.deleted'));
    } catch (e) { toastError(e); }
  }
  async function clearAll() {
    if (!(await confirmDialog(t('confirm.clear')))) return;
    try {
      await api('DELETE', '/clear', { confirm: true });
      forgetAll();
      toast(t('toast.cleared'));
    } catch (e) { toastError(e); }
  }
  function forget(sid) {
    S.sessions.delete(sid);
    S.drafts.delete(sid);
    S.retry.delete(sid);
    S.alerts = S.alerts.filter((a) => a.sid !== sid);
    if (S.current === sid) closeConversation();
    renderList();
    renderAlerts();
  }
  function forgetAll() {
    S.sessions.clear();
    S.drafts.clear();
    S.retry.clear();
    S.alerts = [];
    closeConversation();
    renderAlerts();
  }

  // ---- live feed --------------------------------------------------------
  function setLiveDown(down) {
    S.live.down = down;
    $('liveBanner').hidden = !down;
  }
  async function connectLive() {
    if (S.dead) return;
    const ctrl = new AbortController();
    S.live.ctrl = ctrl;
    try {
      const res = await fetch(API + '/events', { headers: { Authorization: 'Bearer ' + S.token }, signal: ctrl.signal, cache: 'no-store' });
      if (res.status === 401 || res.status === 403) { authFailed(); return; }
      if (!res.ok || !res.body) throw new Error('live ' + res.status);
      const reader = res.body.getReader();
      const dec = new TextDecoder();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          let ev = 'message', data = '';
          for (const line of block.split('\n')) {
            if (line.startsWith('event: ')) ev = line.slice(7);
            else if (line.startsWith('data: ')) data += line.slice(6);
          }
          if (!data) continue;
          let obj;
          try { obj = JSON.parse(data); } catch (e) { continue; }
          handleLive(ev, obj);
        }
      }
    } catch (e) { /* reconnect below */ }
    if (S.dead || S.live.ctrl !== ctrl) return;
    setLiveDown(true);
    const wait = S.live.backoff;
    S.live.backoff = Math.min(S.live.backoff * 2, 30000);
    setTimeout(connectLive, wait);
  }
  function handleLive(ev, m) {
    const sid = m.sid;
    const data = m.data;
    switch (ev) {
      case 'hello': {
        const again = S.live.everUp;
        S.live.everUp = true;
        S.live.backoff = 1000;
        setLiveDown(false);
        if (again) resync();
        break;
      }
      case 'session':
        if (data && data.sid) { S.sessions.set(data.sid, Object.assign({}, S.sessions.get(data.sid) || {}, data)); renderList(); renderAlerts(); }
        break;
      case 'message': {
        const d = S.displayed;
        // only the displayed session of the same generation (invariant 11)
        if (d && data && d.sid === data.sid && d.gen === data.gen && S.current === d.sid) addEntry(data.entry);
        scheduleListReload();
        break;
      }
      case 'relay': {
        const d = S.displayed;
        if (d && data && d.sid === data.sid && S.current === d.sid) { d.session.relayed_to = data.relayed_to || []; renderRelay(); }
        break;
      }
      case 'takeover': {
        const d = S.displayed;
        if (d && d.sid === sid && S.current === sid) { d.takeover = data; renderTakeover(); }
        updateSummaryTakeover(sid, data);
        break;
      }
      case 'trigger':
        if (data) {
          S.alerts.unshift({ sid: data.sid || sid, name: data.name || '', word: data.word || '', at: data.at || Date.now() });
          toast(t('toast.trigger', { name: data.name || '', word: data.word || '' }), 'warn');
          notifyTrigger(data.name || '', data.word || '');
          renderAlerts();
        }
        scheduleListReload();
        break;
      case 'deleted':
        forget(sid || (data && data.sid));
        break;
      case 'cleared':
        forgetAll();
        break;
      case 'revoked':
        authFailed();
        break;
    }
  }
  async function resync() {
    await loadList();
    const d = S.displayed;
    if (!d) return;
    await refreshStatus();
    try {
      const page = await api('GET', '/messages', { sid: d.sid, limit: 50 });
      if (S.displayed !== d || S.current !== d.sid) return;
      if (page.session.gen !== d.gen) { openSession(d.sid); return; }
      d.session.relayed_to = page.session.relayed_to || [];
      renderRelay();
      page.messages.slice().reverse().forEach(addEntry);
    } catch (e) { /* best effort */ }
  }

  // ---- wiring -----------------------------------------------------------
  function readToken() {
    const m = location.hash.match(/(?:^#|&)token=([^&]+)/);
    if (m) {
      sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]));
      history.replaceState(null, '', location.pathname + location.search);
    }
    return sessionStorage.getItem(TOKEN_KEY);
  }
  function bind() {
    document.querySelectorAll('.tab').forEach((b) => b.addEventListener('click', () => {
      S.tab = b.dataset.tab;
      document.querySelectorAll('.tab').forEach((x) => x.classList.toggle('active', x === b));
      renderList();
    }));
    $('searchInput').addEventListener('input', (ev) => { S.q = ev.target.value.trim(); renderList(); });
    $('alertBtn').addEventListener('click', () => { $('alertPanel').hidden = !$('alertPanel').hidden; renderAlerts(); });
    $('clearBtn').addEventListener('click', clearAll);
    $('takeoverBtn').addEventListener('click', toggleTakeover);
    $('handledBtn').addEventListener('click', markHandled);
    $('exportBtn').addEventListener('click', exportSession);
    $('deleteBtn').addEventListener('click', deleteSession);
    $('infoBtn').addEventListener('click', () => { $('infoPanel').hidden = !$('infoPanel').hidden; });
    $('chatTitle').addEventListener('click', () => { if (S.displayed) openCard(S.displayed.session.type === 'group' ? 'group' : 'user'); });
    $('sendBtn').addEventListener('click', sendMessage);
    const input = $('msgInput');
    input.addEventListener('compositionstart', () => { S.composing = true; });
    input.addEventListener('compositionend', () => { S.composing = false; });
    input.addEventListener('keydown', (ev) => {
      if (ev.key !== 'Enter' || ev.shiftKey || ev.isComposing || S.composing || ev.keyCode === 229) return;
      ev.preventDefault();
      sendMessage();
    });
    input.addEventListener('input', () => { input.style.height = 'auto'; input.style.height = Math.min(input.scrollHeight, 120) + 'px'; });
    $('imageBtn').addEventListener('click', () => $('imageInput').click());
    $('fileBtn').addEventListener('click', () => $('fileInput').click());
    $('cannedBtn').addEventListener('click', openCanned);
    $('suggestBtn').addEventListener('click', suggestReply);
    $('imageInput').addEventListener('change', (ev) => { pickAttachment('image', ev.target.files[0]); ev.target.value = ''; });
    $('fileInput').addEventListener('change', (ev) => { pickAttachment('file', ev.target.files[0]); ev.target.value = ''; });
    $('messages').addEventListener('scroll', () => {
      const box = $('messages');
      S.stick = box.scrollHeight - box.scrollTop - box.clientHeight < 80;
      if (box.scrollTop < 40) loadOlder();
    });
    $('cardOverlay').addEventListener('click', (ev) => { if (ev.target === $('cardOverlay')) closeCard(); });
    const lang = $('langSelect');
    lang.value = S.lang;
    lang.addEventListener('change', () => {
      S.lang = lang.value;
      store.set('takeover.console.lang', S.lang);
      relabel();
    });
    const theme = $('themeSelect');
    theme.value = S.themePref;
    theme.addEventListener('change', () => { S.themePref = theme.value; store.set('takeover.console.theme', S.themePref); applyTheme(); });
    $('backBtn').addEventListener('click', () => { saveDraft(S.current); closeConversation(); });
    if (PAGE) $('notifyBtn').hidden = true;
    else $('notifyBtn').addEventListener('click', toggleNotify);
    if (darkMQ && darkMQ.addEventListener) darkMQ.addEventListener('change', applyTheme);
  }
  function relabel() {
    applyI18n();
    if (!$('app').hidden) {
      renderList();
      renderAlerts();
      if (S.displayed && S.displayed.sid === S.current) renderConversation();
      else renderTakeover();
    }
    renderNotify();
  }

  // ---- notifications (standalone, opt-in) ------------------------------
  // Off by default; the permission is asked only on the operator's click,
  // and the AudioContext is made there too (browsers allow sound only
  // after a gesture). The choice is kept in localStorage.
  function renderNotify() {
    const b = $('notifyBtn');
    b.setAttribute('aria-pressed', String(S.notify.on));
    b.classList.toggle('on', S.notify.on);
    b.title = t(S.notify.on ? 'notify.on' : 'notify.off');
    b.setAttribute('aria-label', b.title);
  }
  async function toggleNotify() {
    S.notify.on = !S.notify.on;
    store.set('takeover.console.notify', S.notify.on ? '1' : '0');
    if (S.notify.on) {
      try { S.notify.audio = S.notify.audio || new (window.AudioContext || window.webkitAudioContext)(); } catch (e) { S.notify.audio = null; }
      if (window.Notification && Notification.permission === 'default') {
        try { await Notification.requestPermission(); } catch (e) { /* sound only */ }
      }
      beep();
    }
    renderNotify();
  }
  function beep() {
    const ac = S.notify.audio;
    if (!ac) return;
    try {
      if (ac.state === 'suspended') ac.resume();
      const o = ac.createOscillator(), g = ac.createGain();
      o.frequency.value = 880;
      g.gain.setValueAtTime(0.15, ac.currentTime);
      g.gain.exponentialRampToValueAtTime(0.001, ac.currentTime + 0.25);
      o.connect(g);
      g.connect(ac.destination);
      o.start();
      o.stop(ac.currentTime + 0.25);
      S.notify.beeps = (S.notify.beeps || 0) + 1;
    } catch (e) { /* no sound */ }
  }
  function notifyTrigger(name, word) {
    if (PAGE || !S.notify.on) return;
    beep();
    if (window.Notification && Notification.permission === 'granted' && document.hidden) {
      try { new Notification(t('app.title'), { body: t('toast.trigger', { name, word }), tag: 'takeover-trigger' }); } catch (e) { /* not shown */ }
    }
  }

  // ---- polling (page) ----------------------------------------------------
  // The page has no live feed: it reloads the list and the open session's
  // newest entries and takeover state every POLL_MS, and turns sessions
  // that became unhandled into alerts, as the trigger event does.
  function startPolling() {
    clearTimeout(S.page.poll);
    S.page.poll = setTimeout(pollOnce, POLL_MS);
  }
  async function pollOnce() {
    if (S.dead) return;
    const before = new Map(Array.from(S.sessions.values(), (s) => [s.sid, !!s.unread]));
    try {
      await resync();
      for (const s of S.sessions.values()) {
        if (s.unread && before.has(s.sid) && !before.get(s.sid)) {
          S.alerts.unshift({ sid: s.sid, name: sessionName(s), word: s.triggered_word || '', at: s.last_msg_at || Date.now() });
          toast(t('toast.trigger', { name: sessionName(s), word: s.triggered_word || '' }), 'warn');
        }
      }
      renderAlerts();
    } catch (e) { /* the next poll retries */ }
    S.page.polls = (S.page.polls || 0) + 1;
    startPolling();
  }

  function exposeHooks() {
    if (document.documentElement.dataset.hooks !== 'on') return;
    const name = (a) => (a ? a.name : null);
    window.TakeoverConsole = {
      snapshot() {
        const drafts = {};
        for (const [k, d] of S.drafts) drafts[k] = { text: d.text, image: name(d.image), file: name(d.file) };
        return {
          current: S.current, displayed: S.displayed ? S.displayed.sid : null, displayedGen: S.displayed ? S.displayed.gen : null,
          loading: S.loading, sending: S.sending, drafts,
          staged: { image: name(S.staged.image), file: name(S.staged.file) },
          owners: { image: S.staged.image ? S.staged.image.owner : null, file: S.staged.file ? S.staged.file.owner : null },
          text: $('msgInput').value, live: !S.live.down && S.live.everUp, dead: S.dead, settled: Object.assign({}, S.settled),
          notify: S.notify.on, beeps: S.notify.beeps || 0,
        };
      },
      hooks,
      stage(ownerSid, kind, fname, dataURL) {
        S.staged[kind] = { owner: ownerSid, dataURL, name: fname, size: 0 };
        renderPreview();
      },
      openSession,
      sendMessage,
      resync,
    };
  }

  async function boot() {
    S.lang = store.get('takeover.console.lang') || ((navigator.language || '').toLowerCase().startsWith('zh') ? 'zh_Hans' : 'en_US');
    S.themePref = store.get('takeover.console.theme') || 'system';
    S.notify.on = !PAGE && store.get('takeover.console.notify') === '1';
    if (PAGE) {
      document.documentElement.classList.add('in-page');
      window.addEventListener('message', onParentMessage);
    }
    applyTheme();
    await loadCatalogs();
    applyI18n();
    renderNotify();
    exposeHooks();
    if (!PAGE) {
      S.token = readToken();
      if (!S.token) { authFailed(); return; }
    }
    for (let wait = 1000; ; wait = Math.min(wait * 2, 30000)) {
      try {
        S.info = await api('GET', '/info');
        break;
      } catch (e) {
        // a token for an unknown or removed installation opens nothing;
        // anything else (the service restarting) is retried
        if (S.dead || e.status === 403) { authFailed(); return; }
        await new Promise((r) => setTimeout(r, wait));
      }
    }
    $('app').hidden = false;
    bind();
    renderTakeover();
    await loadList();
    if (PAGE) startPolling();
    else connectLive();
  }
  boot();
})();
