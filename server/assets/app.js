// The lc-agent web page: a session list, a chat with streamed answers and
// collapsible tool calls, and a panel with approvals, todos, files and the
// graph. Plain JavaScript, no build step; it talks to the session API
// (/api/sessions...) and reads the server-sent events of each run.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { session: null, running: false, graphs: 0 };

// The token: from ?token= once (then kept in this browser), or typed in.
(function initToken() {
  const params = new URLSearchParams(location.search);
  if (params.has("token")) {
    localStorage.setItem("lc-agent-token", params.get("token"));
    history.replaceState(null, "", location.pathname);
  }
  $("token").value = localStorage.getItem("lc-agent-token") || "";
  $("token").addEventListener("change", () => {
    localStorage.setItem("lc-agent-token", $("token").value.trim());
    loadSessions();
  });
})();

function headers(json) {
  const h = {};
  const token = localStorage.getItem("lc-agent-token");
  if (token) h["Authorization"] = "Bearer " + token;
  if (json) h["Content-Type"] = "application/json";
  return h;
}

function status(text) { $("status").textContent = text || ""; }

async function api(method, path, body) {
  const r = await fetch(path, { method, headers: headers(body !== undefined), body: body === undefined ? undefined : JSON.stringify(body) });
  if (!r.ok) {
    let message = r.status + " " + r.statusText;
    try { message = (await r.json()).error.message; } catch (_) { /* not JSON */ }
    throw new Error(message);
  }
  return r.status === 204 ? null : r.json();
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

async function loadSessions() {
  try {
    const page = await api("GET", "/api/sessions");
    const list = $("sessions");
    list.replaceChildren();
    for (const s of page.sessions) {
      const li = el("li", s.id === state.session ? "active" : "", s.name || s.id);
      li.dataset.id = s.id;
      li.title = s.id;
      li.onclick = () => openSession(s.id);
      list.append(li);
    }
    status("");
  } catch (e) { status(e.message); }
}

async function newSession() {
  try {
    const s = await api("POST", "/api/sessions", { name: "Session " + new Date().toLocaleString() });
    await loadSessions();
    await openSession(s.id);
  } catch (e) { status(e.message); }
}

async function openSession(id) {
  state.session = id;
  for (const li of $("sessions").children) li.classList.toggle("active", li.dataset.id === id);
  await refresh();
}

async function refresh() {
  if (!state.session) return;
  try {
    const s = await api("GET", "/api/sessions/" + state.session);
    $("session-name").textContent = s.name || s.id;
    renderMessages(s.messages);
    renderTodos(s.todos);
    renderFiles(s.files);
    renderApprovals(s.pending_approvals);
    await renderGraph(s.mermaid);
  } catch (e) { status(e.message); }
}

function toolCallBox(call) {
  const d = el("details", "tool");
  d.dataset.callId = call.id;
  const summary = el("summary", "", "⚙ " + call.name);
  d.append(summary, el("pre", "args", call.arguments));
  return d;
}

function renderMessages(messages) {
  const box = $("messages");
  box.replaceChildren();
  const calls = new Map();
  for (const m of messages) {
    if (m.role === "system") continue;
    if (m.role === "human") box.append(el("div", "msg human", m.content));
    if (m.role === "ai") {
      if (m.content) box.append(el("div", "msg ai", m.content));
      for (const call of m.tool_calls || []) {
        const d = toolCallBox(call);
        calls.set(call.id, d);
        box.append(d);
      }
    }
    if (m.role === "tool") {
      const d = calls.get(m.tool_call_id) || box.appendChild(toolCallBox({ id: m.tool_call_id, name: m.name || "tool", arguments: "" }));
      const err = m.status === "error";
      d.querySelector("summary").classList.toggle("status-error", err);
      d.append(el("pre", "result", m.content));
    }
  }
  box.scrollTop = box.scrollHeight;
}

function renderTodos(todos) {
  const ul = $("todos");
  ul.replaceChildren();
  if (!todos.length) ul.append(el("li", "empty", "none"));
  for (const t of todos) ul.append(el("li", t.status, t.content));
}

function renderFiles(files) {
  const ul = $("files");
  ul.replaceChildren();
  const paths = Object.keys(files);
  if (!paths.length) ul.append(el("li", "empty", "none"));
  for (const path of paths) {
    const li = el("li", "", path);
    li.onclick = () => {
      const v = $("file-view");
      v.hidden = false;
      const text = files[path].content;
      v.textContent = text === null ? "(not shown: binary or larger than 64 KiB)" : text;
    };
    ul.append(li);
  }
}

function renderApprovals(pending) {
  const box = $("approvals");
  box.replaceChildren();
  if (!pending.length) { box.append(el("p", "empty", "none")); return; }
  for (const p of pending) {
    const div = el("div", "approval");
    div.append(el("strong", "", p.tool_call.name), el("code", "", p.tool_call.arguments));
    for (const kind of ["approve", "reject"]) {
      if (!p.allowed.includes(kind)) continue;
      const b = el("button", kind, kind === "approve" ? "Approve" : "Reject");
      b.type = "button";
      b.onclick = () => decide(p.node_id, kind);
      div.append(b);
    }
    box.append(div);
  }
}

async function renderGraph(text) {
  const box = $("graph");
  if (!window.mermaid || !text) { box.textContent = text || ""; return; }
  try {
    const { svg } = await window.mermaid.render("graph-svg-" + (++state.graphs), text);
    box.innerHTML = svg;
  } catch (e) { box.replaceChildren(el("pre", "", text)); }
}

// Reads a server-sent event stream from a fetch response.
async function readEvents(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let name = "message", data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data += line.slice(5).trimStart();
      }
      if (data) onEvent(name, JSON.parse(data));
    }
  }
}

// Posts to a run endpoint and shows its events as they come.
async function run(path, body) {
  if (state.running) return;
  state.running = true;
  $("send").disabled = true;
  status("running…");
  const box = $("messages");
  let live = null;
  try {
    const r = await fetch(path, { method: "POST", headers: headers(true), body: JSON.stringify(body) });
    if (!r.ok) {
      let message = r.status + "";
      try { message = (await r.json()).error.message; } catch (_) { /* not JSON */ }
      throw new Error(message);
    }
    await readEvents(r, (name, data) => {
      if (name === "text") {
        if (!live || live.dataset.node !== data.node_id) {
          live = el("div", "msg ai streaming");
          live.dataset.node = data.node_id;
          box.append(live);
        }
        live.textContent += data.text;
        // How many streamed pieces this page showed (tests read it).
        document.body.dataset.deltas = String(Number(document.body.dataset.deltas || 0) + 1);
        box.scrollTop = box.scrollHeight;
      } else if (name === "tool_call_started") {
        const d = toolCallBox({ id: data.tool_call_id, name: data.name, arguments: "" });
        d.classList.add("live");
        box.append(d);
      } else if (name === "tool_call_finished") {
        status(data.name + " " + data.status + " (" + data.duration_ms.toFixed(1) + " ms)");
      } else if (name === "approval_needed") {
        renderApprovals(data.pending);
      } else if (name === "error") {
        box.append(el("div", "msg error", data.message));
      }
    });
    status("");
  } catch (e) {
    box.append(el("div", "msg error", e.message));
    status(e.message);
  } finally {
    state.running = false;
    $("send").disabled = false;
  }
  await refresh();
  await loadSessions();
}

async function send(event) {
  event.preventDefault();
  const text = $("input").value.trim();
  if (!text) return;
  if (!state.session) await newSession();
  if (!state.session) return;
  $("input").value = "";
  $("messages").append(el("div", "msg human", text));
  await run("/api/sessions/" + state.session + "/messages", { content: text });
}

async function decide(nodeId, decision) {
  await run("/api/sessions/" + state.session + "/approvals", { decisions: [{ node_id: nodeId, decision }] });
}

$("composer").addEventListener("submit", send);
$("input").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); $("composer").requestSubmit(); }
});
$("new-session").addEventListener("click", newSession);
if (window.mermaid) window.mermaid.initialize({ startOnLoad: false, securityLevel: "strict" });
loadSessions();
