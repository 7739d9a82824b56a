/*
 * herald-inbox.js — Herald's in-app inbox as a web component.
 *
 *   <script src="https://herald.example.com/v1/inbox/herald-inbox.js"></script>
 *   <herald-inbox token="…" locale="es"></herald-inbox>
 *
 * Attributes:
 *   token   the subscriber token the tenant's backend minted (POST /v1/inbox/tokens).
 *           Setting a new one reconnects; on a 401 the element dispatches
 *           "herald-inbox:unauthorized" (bubbles, composed) so the page can mint another.
 *   locale  en, es or ru; else the document's lang, else the browser's language, else en.
 *   api     Herald's base URL; defaults to the origin this script was loaded from.
 * Events: "herald-inbox:item" (detail: the item) when a new item arrives live;
 *         "herald-inbox:unauthorized" when the token is refused.
 *
 * Theme it with these CSS custom properties, set on herald-inbox or any ancestor:
 *   --herald-inbox-bell      the bell's colour                       (the surrounding text's)
 *   --herald-inbox-accent    links, focus rings, the unread marker   (#2563eb)
 *   --herald-inbox-bg        the panel's background                  (#ffffff)
 *   --herald-inbox-fg        the text                                (#111827)
 *   --herald-inbox-muted     times, bodies of read items, empty state (#6b7280)
 *   --herald-inbox-border    borders and separators                  (#e5e7eb)
 *   --herald-inbox-badge-bg  the unread badge                        (#dc2626)
 *   --herald-inbox-badge-fg  the badge's number                      (#ffffff)
 *   --herald-inbox-font      the font family                         (inherited)
 *   --herald-inbox-radius    corners of the panel and buttons        (8px)
 *   --herald-inbox-width     the panel's width                       (22rem)
 *   --herald-inbox-max-height the panel's height before it scrolls   (70vh)
 *   --herald-inbox-shadow    the panel's shadow
 *
 * One file, no framework, no build step, nothing fetched but Herald's own API.
 * Everything an item says is set as text (textContent), never as HTML, and a
 * link is made only of an http: or https: URL.
 */
(() => {
  "use strict";

  // The script's own origin, captured while it runs: currentScript is null later.
  const scriptOrigin = (() => {
    try {
      return new URL(document.currentScript.src).origin;
    } catch (_) {
      return window.location.origin;
    }
  })();

  const PAGE_SIZE = 20;
  const BACKOFF_MIN = 1000;
  const BACKOFF_MAX = 30000;

  const STRINGS = {
    en: {
      bell: (n) => (n > 0 ? `Notifications, ${n} unread` : "Notifications"),
      title: "Notifications",
      markAllRead: "Mark all as read",
      markRead: "Mark as read",
      archive: "Archive",
      open: "Open",
      document: "Document",
      loadMore: "Load more",
      empty: "No notifications yet.",
      failed: "Notifications could not be loaded.",
    },
    es: {
      bell: (n) => (n > 0 ? `Notificaciones, ${n} sin leer` : "Notificaciones"),
      title: "Notificaciones",
      markAllRead: "Marcar todas como leídas",
      markRead: "Marcar como leída",
      archive: "Archivar",
      open: "Abrir",
      document: "Documento",
      loadMore: "Cargar más",
      empty: "Aún no hay notificaciones.",
      failed: "No se pudieron cargar las notificaciones.",
    },
    ru: {
      bell: (n) => (n > 0 ? `Уведомления, непрочитанных: ${n}` : "Уведомления"),
      title: "Уведомления",
      markAllRead: "Отметить все как прочитанные",
      markRead: "Отметить как прочитанное",
      archive: "В архив",
      open: "Открыть",
      document: "Документ",
      loadMore: "Показать ещё",
      empty: "Уведомлений пока нет.",
      failed: "Не удалось загрузить уведомления.",
    },
  };

  const STYLE = `
:host { display: inline-block; position: relative; font-family: var(--herald-inbox-font, inherit);
  color: var(--herald-inbox-fg, #111827); }
button { font: inherit; color: inherit; cursor: pointer; border-radius: var(--herald-inbox-radius, 8px); }
button:focus-visible, a:focus-visible, [tabindex]:focus-visible {
  outline: 2px solid var(--herald-inbox-accent, #2563eb); outline-offset: 2px; }
.bell { position: relative; background: none; border: 0; padding: .4rem; line-height: 0;
  color: var(--herald-inbox-bell, inherit); }
.bell svg { width: 1.5rem; height: 1.5rem; }
.badge { position: absolute; top: 0; right: 0; min-width: 1.1rem; padding: 0 .25rem; box-sizing: border-box;
  border-radius: 999px; font-size: .7rem; line-height: 1.1rem; font-weight: 700; text-align: center;
  background: var(--herald-inbox-badge-bg, #dc2626); color: var(--herald-inbox-badge-fg, #ffffff); }
.badge[hidden], .panel[hidden], .more[hidden] { display: none; }
.panel { position: absolute; right: 0; top: calc(100% + .4rem); z-index: 1000; box-sizing: border-box;
  width: var(--herald-inbox-width, 22rem); max-width: calc(100vw - 1rem);
  max-height: var(--herald-inbox-max-height, 70vh); overflow: auto;
  background: var(--herald-inbox-bg, #ffffff); border: 1px solid var(--herald-inbox-border, #e5e7eb);
  border-radius: var(--herald-inbox-radius, 8px);
  box-shadow: var(--herald-inbox-shadow, 0 10px 30px rgba(0,0,0,.15)); }
header { display: flex; align-items: center; justify-content: space-between; gap: .5rem;
  padding: .6rem .8rem; border-bottom: 1px solid var(--herald-inbox-border, #e5e7eb); }
h2 { margin: 0; font-size: 1rem; }
.text-button { background: none; border: 0; padding: .2rem .3rem; font-size: .8rem;
  color: var(--herald-inbox-accent, #2563eb); }
ul { list-style: none; margin: 0; padding: 0; }
li { padding: .6rem .8rem; border-bottom: 1px solid var(--herald-inbox-border, #e5e7eb); }
li.unread { box-shadow: inset 3px 0 0 var(--herald-inbox-accent, #2563eb); }
.title { margin: 0; font-weight: 400; overflow-wrap: anywhere; }
li.unread .title { font-weight: 700; }
.body { margin: .2rem 0 0; font-size: .875rem; overflow-wrap: anywhere; white-space: pre-line; }
li.read .body { color: var(--herald-inbox-muted, #6b7280); }
time { display: block; margin-top: .2rem; font-size: .75rem; color: var(--herald-inbox-muted, #6b7280); }
.actions { display: flex; flex-wrap: wrap; gap: .25rem .6rem; margin-top: .35rem; align-items: center; }
.actions a { padding: .2rem .3rem; font-size: .8rem; color: var(--herald-inbox-accent, #2563eb); }
.empty, .failed { padding: 1.5rem .8rem; margin: 0; text-align: center; color: var(--herald-inbox-muted, #6b7280); }
.more { display: block; width: calc(100% - 1.6rem); margin: .6rem .8rem; padding: .4rem;
  background: none; border: 1px solid var(--herald-inbox-border, #e5e7eb); }
`;

  // bellIcon is drawn with DOM calls, not innerHTML, so that a page that
  // enforces Trusted Types runs the component.
  function bellIcon() {
    const ns = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(ns, "svg");
    const attrs = { viewBox: "0 0 24 24", fill: "none", stroke: "currentColor", "stroke-width": "2",
      "stroke-linecap": "round", "stroke-linejoin": "round", "aria-hidden": "true", focusable: "false" };
    for (const [k, v] of Object.entries(attrs)) svg.setAttribute(k, v);
    for (const d of ["M18 8a6 6 0 0 0-12 0c0 7-3 9-3 9h18s-3-2-3-9", "M13.73 21a2 2 0 0 1-3.46 0"]) {
      const path = document.createElementNS(ns, "path");
      path.setAttribute("d", d);
      svg.append(path);
    }
    return svg;
  }

  // styleShadow gives the shadow root its style as a constructed sheet,
  // which a page's Content-Security-Policy without 'unsafe-inline' allows
  // where a <style> element would be refused.
  function styleShadow(root) {
    if ("adoptedStyleSheets" in root && typeof CSSStyleSheet.prototype.replaceSync === "function") {
      const sheet = new CSSStyleSheet();
      sheet.replaceSync(STYLE);
      root.adoptedStyleSheets = [sheet];
      return;
    }
    const style = document.createElement("style");
    style.textContent = STYLE;
    root.append(style);
  }

  let instances = 0;

  // safeURL is the URL as a link may carry it, or null: only http and https,
  // so no javascript: or data: URL from an item ever becomes clickable.
  function safeURL(raw) {
    if (typeof raw !== "string" || raw === "") return null;
    try {
      const u = new URL(raw, document.baseURI);
      return u.protocol === "http:" || u.protocol === "https:" ? u.href : null;
    } catch (_) {
      return null;
    }
  }

  // pickLocale is the first of the attribute, the page's lang and the
  // browser's language that names a language the component speaks.
  function pickLocale(attr) {
    for (const tag of [attr, document.documentElement.lang, navigator.language]) {
      if (!tag) continue;
      const lang = tag.toLowerCase().split(/[-_]/)[0];
      if (STRINGS[lang]) return { tag, lang };
    }
    return { tag: "en", lang: "en" };
  }

  function relativeTime(iso, tag, now) {
    const then = Date.parse(iso);
    if (Number.isNaN(then)) return "";
    const seconds = Math.round((then - now) / 1000);
    const units = [["year", 31536000], ["month", 2592000], ["week", 604800], ["day", 86400],
      ["hour", 3600], ["minute", 60], ["second", 1]];
    let format;
    try {
      format = new Intl.RelativeTimeFormat(tag, { numeric: "auto" });
    } catch (_) {
      format = new Intl.RelativeTimeFormat("en", { numeric: "auto" });
    }
    for (const [unit, size] of units) {
      if (Math.abs(seconds) >= size || unit === "second") {
        return format.format(Math.round(seconds / size), unit);
      }
    }
    return "";
  }

  class Unauthorized extends Error {}

  // parseSSE feeds text to an event source's parser and calls emit for each
  // complete event; it returns the unfinished line to keep for the next chunk.
  function parseSSE(buffer, state, emit) {
    const lines = buffer.split(/\r\n|\r|\n/);
    const rest = lines.pop();
    for (const line of lines) {
      if (line === "") {
        if (state.data.length > 0) emit(state.event || "message", state.data.join("\n"));
        state.event = "";
        state.data = [];
        continue;
      }
      if (line.startsWith(":")) continue; // a heartbeat
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") state.event = value;
      else if (field === "data") state.data.push(value);
      else if (field === "id" && !value.includes("\0")) state.lastId = value;
    }
    return rest;
  }

  class HeraldInbox extends HTMLElement {
    static get observedAttributes() {
      return ["token", "locale", "api"];
    }

    constructor() {
      super();
      this._uid = `herald-inbox-${++instances}`;
      this._items = [];
      this._counts = { unseen: 0, unread: 0, total: 0 };
      this._cursor = null;
      this._loaded = false;
      this._failed = false;
      this._session = null;
      this._lastEventId = "";
      this._seenAsked = new Set();
      this._looks = new WeakMap(); // each item element → what it was drawn from
      this._build();
    }

    connectedCallback() {
      this._connected = true;
      this._restart();
    }

    disconnectedCallback() {
      this._connected = false;
      this._stop();
    }

    attributeChangedCallback(name, old, value) {
      if (old === value) return;
      if (name === "locale") {
        this._render();
        return;
      }
      if (this._connected) this._restart();
    }

    get _strings() {
      return STRINGS[pickLocale(this.getAttribute("locale")).lang];
    }

    get _api() {
      return (this.getAttribute("api") || scriptOrigin).replace(/\/+$/, "");
    }

    _build() {
      const root = this.attachShadow({ mode: "open" });
      styleShadow(root);
      this._bell = this._el("button", "bell", { type: "button", "aria-haspopup": "dialog",
        "aria-expanded": "false", "aria-controls": `${this._uid}-panel` });
      this._bell.append(bellIcon());
      this._badge = this._el("span", "badge", { "aria-hidden": "true" });
      this._bell.append(this._badge);
      this._panel = this._el("div", "panel", { role: "dialog", id: `${this._uid}-panel`,
        "aria-labelledby": `${this._uid}-title`, tabindex: "-1" });
      this._panel.hidden = true;
      const header = document.createElement("header");
      this._heading = this._el("h2", "", { id: `${this._uid}-title` });
      this._readAll = this._el("button", "text-button", { type: "button" });
      header.append(this._heading, this._readAll);
      this._list = this._el("ul", "", {});
      this._status = this._el("p", "empty", { role: "status" });
      this._more = this._el("button", "more", { type: "button" });
      this._panel.append(header, this._list, this._status, this._more);
      root.append(this._bell, this._panel);

      this._bell.addEventListener("click", () => this._toggle());
      this._readAll.addEventListener("click", () => this._markAllRead());
      this._more.addEventListener("click", () => this._loadPage(this._cursor));
      this._list.addEventListener("click", (e) => this._onItemClick(e));
      root.addEventListener("keydown", (e) => {
        if (e.key === "Escape" && !this._panel.hidden) {
          e.stopPropagation();
          this._close();
        }
      });
      this._outside = (e) => {
        if (!this._panel.hidden && !e.composedPath().includes(this)) this._close(false);
      };
    }

    _el(tag, className, attrs) {
      const el = document.createElement(tag);
      if (className) el.className = className;
      for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
      return el;
    }

    // _restart drops the current session — its requests, its stream — and
    // starts another with the current token and API.
    _restart() {
      this._stop();
      this._items = [];
      this._counts = { unseen: 0, unread: 0, total: 0 };
      this._cursor = null;
      this._loaded = false;
      this._failed = false;
      this._lastEventId = "";
      this._seenAsked = new Set();
      this._render();
      const token = this.getAttribute("token");
      if (!token) return;
      this._session = { token, api: this._api, abort: new AbortController(), refused: false };
      document.addEventListener("click", this._outside);
      this._refreshCounts();
      this._loadPage(null);
      this._stream(this._session);
    }

    _stop() {
      document.removeEventListener("click", this._outside);
      if (this._session) this._session.abort.abort();
      this._session = null;
    }

    // _request calls the API for the current session; a 401 ends the
    // session and tells the page, which may set a new token.
    async _request(method, path, session = this._session) {
      if (!session) throw new Error("herald-inbox: no token");
      const res = await fetch(session.api + path, {
        method,
        headers: { Authorization: `Bearer ${session.token}`, Accept: "application/json" },
        signal: session.abort.signal,
        credentials: "omit",
      });
      if (res.status === 401) {
        this._unauthorized(session);
        throw new Unauthorized("herald-inbox: the token was refused");
      }
      if (!res.ok) throw new Error(`herald-inbox: ${method} ${path}: ${res.status}`);
      return res.json();
    }

    _unauthorized(session) {
      if (session.refused) return;
      session.refused = true;
      session.abort.abort();
      this.dispatchEvent(new CustomEvent("herald-inbox:unauthorized", { bubbles: true, composed: true }));
    }

    _current(session) {
      return session === this._session && !session.abort.signal.aborted;
    }

    async _refreshCounts() {
      const session = this._session;
      try {
        const counts = await this._request("GET", "/v1/inbox/counts", session);
        if (this._current(session)) this._setCounts(counts);
      } catch (err) {
        this._report(err);
      }
    }

    async _loadPage(cursor) {
      const session = this._session;
      let path = `/v1/inbox/items?limit=${PAGE_SIZE}`;
      if (cursor) path += `&cursor=${encodeURIComponent(cursor)}`;
      try {
        const page = await this._request("GET", path, session);
        if (!this._current(session)) return;
        if (!cursor) this._items = [];
        const known = new Set(this._items.map((i) => i.id));
        for (const item of page.items || []) if (!known.has(item.id)) this._items.push(item);
        this._cursor = page.next_cursor || null;
        this._loaded = true;
        this._failed = false;
        if (!this._panel.hidden) this._markSeen();
      } catch (err) {
        if (this._current(session)) this._failed = !this._loaded;
        this._report(err);
      }
      this._render();
    }

    _report(err) {
      if (err instanceof Unauthorized || err.name === "AbortError") return;
      console.warn(err.message || err);
    }

    // _stream follows the feed's Server-Sent Events with fetch, which can
    // send the token (EventSource cannot), and comes back after a drop with
    // the last event id so that nothing in between is lost.
    async _stream(session) {
      let delay = BACKOFF_MIN;
      while (this._current(session)) {
        try {
          await this._follow(session, () => {
            delay = BACKOFF_MIN;
          });
        } catch (err) {
          if (err instanceof Unauthorized) return;
          this._report(err);
        }
        if (!this._current(session)) return;
        await new Promise((resolve) => {
          const timer = setTimeout(resolve, delay);
          session.abort.signal.addEventListener("abort", () => {
            clearTimeout(timer);
            resolve();
          }, { once: true });
        });
        delay = Math.min(delay * 2, BACKOFF_MAX);
      }
    }

    async _follow(session, connected) {
      const headers = { Authorization: `Bearer ${session.token}`, Accept: "text/event-stream" };
      if (this._lastEventId) headers["Last-Event-ID"] = this._lastEventId;
      const res = await fetch(`${session.api}/v1/inbox/stream`, {
        headers, signal: session.abort.signal, credentials: "omit", cache: "no-store",
      });
      if (res.status === 401) {
        this._unauthorized(session);
        throw new Unauthorized("herald-inbox: the token was refused");
      }
      if (!res.ok || !res.body) throw new Error(`herald-inbox: the stream answered ${res.status}`);
      connected();
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      const state = { event: "", data: [], lastId: this._lastEventId };
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer = parseSSE(buffer + value, state, (event, data) => {
          if (!this._current(session)) return;
          this._lastEventId = state.lastId;
          this._onEvent(event, data);
        });
      }
    }

    _onEvent(event, data) {
      let msg;
      try {
        msg = JSON.parse(data);
      } catch (_) {
        return;
      }
      if (msg.counts) this._setCounts(msg.counts);
      if (event === "item" && msg.item) {
        this._addLive(msg.item);
        if (msg.dropped) this._applyStates([], msg.dropped);
      } else if (event === "state") this._applyStates(msg.items || [], msg.dropped || []);
      else if (event === "sync") this._loadPage(null);
      this._render();
    }

    _addLive(item) {
      if (this._items.some((i) => i.id === item.id)) return;
      this._items.unshift(item);
      this.dispatchEvent(new CustomEvent("herald-inbox:item", { detail: item, bubbles: true, composed: true }));
      if (!this._panel.hidden) this._markSeen();
    }

    // _applyStates takes a state event: the items' new states, and the ids
    // the feed dropped (its retention or cap).
    _applyStates(states, dropped) {
      for (const s of states) this._merge(s);
      this._items = this._items.filter((it) => !dropped.includes(it.id));
    }

    // _merge takes an item's new state; an archived item leaves the list.
    _merge(state) {
      const i = this._items.findIndex((it) => it.id === state.id);
      if (i < 0) return;
      if (state.archived_at) {
        this._items.splice(i, 1);
        return;
      }
      const item = this._items[i];
      for (const k of ["seen_at", "read_at"]) if (state[k]) item[k] = state[k];
    }

    _setCounts(counts) {
      this._counts = {
        unseen: Number(counts.unseen) || 0,
        unread: Number(counts.unread) || 0,
        total: Number(counts.total) || 0,
      };
      this._renderBell();
    }

    async _act(ids, action) {
      try {
        const items = await Promise.all(ids.map((id) =>
          this._request("POST", `/v1/inbox/items/${encodeURIComponent(id)}/${action}`)));
        for (const item of items) this._merge(item);
        this._render();
        this._refreshCounts();
      } catch (err) {
        this._report(err);
      }
    }

    async _markAllRead() {
      try {
        await this._request("POST", "/v1/inbox/read-all");
        const now = new Date().toISOString();
        for (const item of this._items) {
          item.read_at = item.read_at || now;
          item.seen_at = item.seen_at || now;
        }
        this._render();
        this._refreshCounts();
      } catch (err) {
        this._report(err);
      }
    }

    // _markSeen tells the API the open panel showed the items not yet seen.
    _markSeen() {
      const unseen = this._items.filter((item) => !item.seen_at && !this._seenAsked.has(item.id));
      if (unseen.length === 0) return;
      for (const item of unseen) this._seenAsked.add(item.id);
      this._act(unseen.map((item) => item.id), "seen");
    }

    _onItemClick(e) {
      const button = e.target.closest("button[data-action]");
      if (!button) return;
      const li = button.closest("li");
      this._refocus = { id: li.dataset.id, action: button.dataset.action };
      this._act([li.dataset.id], button.dataset.action);
    }

    _toggle() {
      if (this._panel.hidden) this._open();
      else this._close();
    }

    _open() {
      this._panel.hidden = false;
      this._bell.setAttribute("aria-expanded", "true");
      this._panel.focus();
      this._markSeen();
    }

    _close(returnFocus = true) {
      this._panel.hidden = true;
      this._bell.setAttribute("aria-expanded", "false");
      if (returnFocus) this._bell.focus();
    }

    _render() {
      const t = this._strings;
      this._renderBell();
      this._heading.textContent = t.title;
      this._readAll.textContent = t.markAllRead;
      this._readAll.hidden = this._counts.unread === 0;
      this._more.textContent = t.loadMore;
      this._more.hidden = !this._cursor;
      this._renderList();
    }

    _renderBell() {
      const n = this._counts.unread;
      this._bell.setAttribute("aria-label", this._strings.bell(n));
      this._badge.textContent = n > 99 ? "99+" : String(n);
      this._badge.hidden = n === 0;
    }

    _renderList() {
      const t = this._strings;
      const want = this._refocus || this._focusedControl();
      this._refocus = null;
      const { tag } = pickLocale(this.getAttribute("locale"));
      const now = Date.now();
      // An item drawn as it still is keeps its element (only its time is
      // told again): a press and a release on its button make a click even
      // when the stream redraws the list in between, and a scrolled list
      // keeps its place.
      const drawn = new Map([...this._list.children].map((li) => [li.dataset.id, li]));
      const rows = this._items.map((item) => {
        const look = JSON.stringify([tag, item.title, item.body, item.created_at, item.action_url, item.document_url, !!item.read_at]);
        const li = drawn.get(item.id);
        if (li && this._looks.get(li) === look) {
          const time = li.querySelector("time"), told = relativeTime(item.created_at, tag, now);
          if (time.textContent !== told) time.textContent = told;
          return li;
        }
        const fresh = this._renderItem(item, t, tag, now);
        this._looks.set(fresh, look);
        return fresh;
      });
      // What is no longer drawn leaves first, so that what stays is not
      // moved for it (a moved element is a new target to the mouse).
      const kept = new Set(rows);
      for (const li of drawn.values()) if (!kept.has(li)) li.remove();
      rows.forEach((li, i) => {
        if (this._list.children[i] !== li) this._list.insertBefore(li, this._list.children[i] || null);
      });
      this._status.className = this._failed ? "failed" : "empty";
      this._status.textContent = this._failed ? t.failed : t.empty;
      this._status.hidden = !this._failed && (!this._loaded || this._items.length > 0);
      if (want) this._restoreFocus(want);
    }

    // _focusedControl is the list's control that has the focus, if any, as
    // its item's id and its action (or its link's text).
    _focusedControl() {
      const el = this.shadowRoot.activeElement;
      if (!el || !this._list.contains(el)) return null;
      return { id: el.closest("li").dataset.id, action: el.dataset.action || "" };
    }

    // _restoreFocus keeps a keyboard user's place when the list is redrawn
    // under the control they used.
    _restoreFocus(want) {
      if (this._panel.hidden) return;
      const li = [...this._list.children].find((el) => el.dataset.id === want.id);
      const target = (li && (li.querySelector(`[data-action="${want.action}"]`) || li.querySelector("button,a"))) ||
        this._list.querySelector("button,a") || this._panel;
      target.focus();
    }

    _renderItem(item, t, tag, now) {
      const li = document.createElement("li");
      li.dataset.id = item.id;
      li.className = item.read_at ? "read" : "unread";
      const title = this._el("p", "title", {});
      title.textContent = item.title || "";
      li.append(title);
      if (item.body) {
        const body = this._el("p", "body", {});
        body.textContent = item.body;
        li.append(body);
      }
      const time = this._el("time", "", { datetime: item.created_at || "" });
      time.textContent = relativeTime(item.created_at, tag, now);
      const actions = this._el("div", "actions", {});
      this._link(actions, item.action_url, t.open);
      this._link(actions, item.document_url, t.document);
      if (!item.read_at) actions.append(this._button("read", t.markRead));
      actions.append(this._button("archive", t.archive));
      li.append(time, actions);
      return li;
    }

    _link(parent, raw, label) {
      const href = safeURL(raw);
      if (!href) return;
      const a = this._el("a", "", { href, target: "_blank", rel: "noopener noreferrer" });
      a.textContent = label;
      parent.append(a);
    }

    _button(action, label) {
      const b = this._el("button", "text-button", { type: "button", "data-action": action });
      b.textContent = label;
      return b;
    }
  }

  if (!customElements.get("herald-inbox")) customElements.define("herald-inbox", HeraldInbox);
})();
