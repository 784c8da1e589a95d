// The lc-agent web page: a session list (search, paging, rename, delete),
// a chat with Markdown answers, tool calls summed up in one line, a step
// line while a run goes on, Stop, inline approvals with the four decisions,
// images in messages (yours, and what a tool such as read_file returned)
// and attached to a message (picked, pasted or dropped), and a side panel
// with todos, files and the graph (full view: zoom, pan, node details,
// sub-agents). Plain JavaScript, no build step; it talks to
// the session API (/api/sessions...) and reads each run's server-sent
// events. Every text from the server reaches the page as text
// (textContent) except answers, which go through marked and DOMPurify.
"use strict";

const $ = (id) => document.getElementById(id);
const state = {
  session: null,      // the open session's id
  view: null,         // its last GET /api/sessions/{id}
  running: false,     // a run of this page is going on
  queue: [],          // messages typed during a run, sent after it: {text, parts}
  attached: [],       // images attached to the next message: {name, url (a data URL)}
  graphs: 0,          // mermaid render counter (unique ids)
  sessionsShown: 0,   // how many list entries are on the page
  expanded: new Set(),// sub-network node ids open in the full graph
  notes: [],          // what the last run said (stopped, errors): kept past a refresh
  zoom: { scale: 1, x: 0, y: 0 },
  graphNodes: 0,      // graph nodes asked of the view (0: the server's default); "show earlier" doubles it
};
const PAGE = 30;
// Messages per page of the session view (the server's page size).
const PAGE_MESSAGES = 200;
// Images a message may carry: the types models read and the server's
// limits (server/src/handlers/parts.rs: MAX_IMAGE_BYTES, MAX_IMAGES).
const IMAGE_TYPES = { "image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WebP" };
const MAX_IMAGE_BYTES = 3750000;
const MAX_IMAGES = 20;
// The server's body limit (index.html's data-body-limit): a message with
// its images must fit in it. The largest image the page attaches is the
// server's image limit, or less when the body limit leaves less room
// (base64 makes data a third larger; 64 KiB are kept for the text).
const BODY_LIMIT = Number(document.body.dataset.bodyLimit) || Infinity;
const IMAGE_CAP = Math.min(MAX_IMAGE_BYTES, Math.floor(Math.max(0, BODY_LIMIT - 65536) * 3 / 4));
const narrow = () => window.matchMedia("(max-width: 900px)").matches;

// ---------------------------------------------------------------- basics

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}

function button(label, cls, onclick) {
  const b = el("button", cls, label);
  b.type = "button";
  if (onclick) b.addEventListener("click", onclick);
  return b;
}

function status(text) { $("status").textContent = text || ""; }

function headers(json) {
  const h = {};
  const token = localStorage.getItem("lc-agent-token");
  if (token) h["Authorization"] = "Bearer " + token;
  if (json) h["Content-Type"] = "application/json";
  return h;
}

// An HTTP failure, in the user's words, with what to do.
class ApiFailure extends Error {
  constructor(status, message) { super(plainError(status, message)); this.status = status; this.raw = message; }
}

function plainError(status, message) {
  const m = message || "";
  switch (status) {
    case 0: return "Cannot reach the server. Check that `lc-agent serve` is still running, then try again.";
    case 401: return "The server wants a token: paste yours (LC_AGENT_TOKEN) into the token box at the top.";
    case 403: return /bypass mode/.test(m)
      ? "This server does not allow bypass mode (its operator can start it with --allow-bypass)."
      : "This session belongs to another user.";
    case 404: return "This session no longer exists (it was deleted).";
    case 408: return "The server gave up waiting (request timeout); the run goes on and its answer will show here. A long run may need a larger --timeout on `lc-agent serve`.";
    case 409: return /waits for decisions/.test(m)
      ? "A tool call waits for your decision: approve or reject it first, then send your message."
      : /in progress/.test(m)
      ? "This session is busy with another run. Wait for it to finish (or stop it), then send again."
      : "This session was changed elsewhere meanwhile. The page reloaded it; send again if needed.";
    case 413: return "That is too large for the server (its --body-limit, 2 MiB unless set). Send a shorter message or a smaller image.";
    case 502: return /cannot read images/.test(m)
      ? m.replace(/^the run failed: /, "The run failed: ") + ". Use Edit on your message to send it again without the image."
      : m.replace(/^the run failed: /, "The run failed: ") + " — you can send the message again.";
    case 503: return "The session store cannot be reached (" + m + "). Try again shortly.";
    default: return m || ("The server answered " + status + ".");
  }
}

async function api(method, path, body) {
  let r;
  try {
    r = await fetch(path, { method, headers: headers(body !== undefined), body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (_) { throw new ApiFailure(0, ""); }
  if (!r.ok) throw new ApiFailure(r.status, await errorText(r));
  return r.status === 204 ? null : r.json();
}

async function errorText(r) {
  try { return (await r.json()).error.message; } catch (_) { return r.status + " " + r.statusText; }
}

// ------------------------------------------------------------ Markdown

// Answers are Markdown: marked makes HTML, DOMPurify keeps only safe
// markup (no scripts, handlers, styles, forms, frames); links open in a
// new tab; images become links (an answer cannot make the page fetch).
if (window.DOMPurify) {
  window.DOMPurify.addHook("afterSanitizeAttributes", (node) => {
    if (node.tagName === "A" && node.getAttribute("href")) {
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener noreferrer nofollow");
    }
  });
  // Only a code block's language class is kept (highlight.js reads it).
  window.DOMPurify.addHook("uponSanitizeAttribute", (node, data) => {
    if (data.attrName === "class" && !/^language-[\w+-]+$/.test(data.attrValue)) data.keepAttr = false;
  });
}
const PURIFY = {
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "iframe", "object", "embed", "svg", "math", "img"],
  FORBID_ATTR: ["style", "id"],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#|\/)/i,
};

const escapeHtml = (t) => String(t).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
if (window.marked) {
  window.marked.use({ renderer: { image(token) { return '<a href="' + escapeHtml(token.href || "") + '">image: ' + escapeHtml(token.text || token.href || "") + "</a>"; } } });
}

function markdown(target, text) {
  if (!window.marked || !window.DOMPurify) { target.textContent = text; target.classList.add("plain"); return; }
  const html = window.marked.parse(text, { gfm: true, breaks: false, async: false });
  target.innerHTML = window.DOMPurify.sanitize(html, PURIFY);
  for (const table of target.querySelectorAll("table")) {
    const wrap = el("div", "table-wrap");
    table.replaceWith(wrap);
    wrap.append(table);
  }
  for (const code of target.querySelectorAll("pre > code")) {
    const pre = code.parentElement;
    const lang = ((code.className.match(/language-([\w+-]+)/) || [])[1]) || "";
    if (window.hljs) {
      try { window.hljs.highlightElement(code); } catch (_) { /* unknown language */ }
    }
    const copy = button("Copy", "copy small", async () => {
      try { await navigator.clipboard.writeText(code.textContent); copy.textContent = "Copied"; }
      catch (_) { copy.textContent = "Select and copy"; }
      setTimeout(() => { copy.textContent = "Copy"; }, 1500);
    });
    copy.setAttribute("aria-label", "Copy the code" + (lang ? " (" + lang + ")" : ""));
    pre.classList.add("code");
    pre.prepend(copy);
  }
}

function aiBubble(text) {
  const d = el("div", "msg ai");
  d.dataset.raw = text;
  markdown(d, text);
  return d;
}

// ---------------------------------------------------------- tool calls

function parseArgs(args) {
  if (args && typeof args === "object") return args;
  if (!args) return {};
  try { return JSON.parse(args); } catch (_) { return null; }
}

function pretty(args) {
  const parsed = parseArgs(args);
  return parsed === null ? String(args) : JSON.stringify(parsed, null, 2);
}

function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }

function countLines(text) {
  const t = (text || "").replace(/\n$/, "");
  return t ? t.split("\n").length : 0;
}

// One line that says what a call did: `read_file /src/main.rs — 120 lines`.
function toolSummary(name, args, result, failed) {
  const a = parseArgs(args) || {};
  const path = a.file_path || a.path || a.pattern_path || "";
  let what = name;
  if (name === "grep" && a.pattern !== undefined) what += ' "' + a.pattern + '"' + (a.path ? " in " + a.path : "");
  else if (name === "execute" && a.command) what += " `" + a.command + "`";
  else if (name === "task" && a.description) what += " — " + a.description;
  else if (name === "glob" && a.pattern) what += " " + a.pattern;
  else if (path) what += " " + path;
  else {
    const first = Object.values(a).find((v) => typeof v === "string");
    if (first) what += " " + first;
  }
  if (what.length > 110) what = what.slice(0, 109) + "…";
  if (result === undefined || result === null) return what;
  if (failed) return what + " — error: " + (result.replace(/^Error:\s*/, "").split("\n")[0].slice(0, 120));
  const lines = countLines(result);
  switch (name) {
    case "read_file": return what + " — " + plural(lines, "line");
    case "write_file": return what + " — " + plural(countLines(a.content), "line") + " written";
    case "edit_file": return what + " — edited";
    case "grep": return what + " — " + (/^no match/i.test(result) ? "no matches" : plural(lines, "match"));
    case "ls": case "glob": return what + " — " + plural(lines, "entry").replace("entrys", "entries");
    case "write_todos": return what.replace(/ .*/, "") + " — " + plural((a.todos || []).length, "item");
    default: return what + " — " + (lines > 1 ? plural(lines, "line") : result.slice(0, 80));
  }
}

function toolBox(call) {
  const d = el("details", "tool");
  d.dataset.callId = call.id;
  d.dataset.name = call.name;
  d.dataset.args = call.arguments || "";
  const summary = el("summary");
  summary.append(el("span", "tool-icon", "⚙"), el("span", "tool-line", toolSummary(call.name, call.arguments)));
  d.append(summary);
  if (call.arguments && call.arguments !== "{}") d.append(el("div", "label", "arguments"), el("pre", "args", pretty(call.arguments)));
  return d;
}

// `answered`: a person wrote the result instead of running the call
// ("Answer instead"): nothing ran, so the line says so.
function finishToolBox(d, content, failed, answered) {
  d.classList.remove("live");
  d.classList.toggle("error", failed);
  d.querySelector(".tool-line").textContent = answered
    ? toolSummary(d.dataset.name, d.dataset.args) + " — not run: answered by you"
    : toolSummary(d.dataset.name, d.dataset.args, content, failed);
  for (const old of d.querySelectorAll(":scope > .result, :scope > .label.result-label")) old.remove();
  d.append(el("div", "label result-label", failed ? "error" : "result"), el("pre", "result", content));
}

// ----------------------------------------------------------------- images

function megabytes(n) { return (n / 1e6).toFixed(2) + " MB"; }

// An image part as a URL the page may show: base64 data of a type models
// read, as a data: URL; null for anything else (an image given by a web
// address is shown as a link: the page never fetches from another site).
function imageSrc(p) {
  if (!p || p.type !== "image") return null;
  if (typeof p.data === "string" && IMAGE_TYPES[p.media_type] && /^[A-Za-z0-9+/]*={0,2}$/.test(p.data)) {
    return "data:" + p.media_type + ";base64," + p.data;
  }
  const m = /^data:(image\/[a-z]+);base64,[A-Za-z0-9+/]*={0,2}$/.exec(p.url || "");
  return m && IMAGE_TYPES[m[1]] ? p.url : null;
}

// A message's parts after its text: images (a click shows one at full
// size) and the text between them.
function partsView(parts, cls) {
  const box = el("div", "msg-images" + (cls ? " " + cls : ""));
  let n = 0;
  for (const p of parts || []) {
    if (p.type === "text") { box.append(el("div", "part-text", p.text)); continue; }
    if (p.type !== "image") continue;
    n += 1;
    const src = imageSrc(p);
    if (src) {
      const img = el("img", "msg-image");
      img.src = src;
      img.alt = "image " + n + (p.media_type ? " (" + IMAGE_TYPES[p.media_type] + ")" : "");
      img.title = "Click to see it at full size";
      img.tabIndex = 0;
      const zoom = () => img.classList.toggle("zoomed");
      img.addEventListener("click", zoom);
      img.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); zoom(); } });
      box.append(img);
    } else if (/^https?:\/\//i.test(p.url || "")) {
      const a = el("a", "image-link", "image: " + p.url);
      a.href = p.url;
      a.target = "_blank";
      a.rel = "noopener noreferrer nofollow";
      box.append(a);
    } else {
      box.append(el("span", "image-link", "(an image the page cannot show)"));
    }
  }
  return box;
}

// Reads a picked, pasted or dropped file as a data URL.
function dataUrl(file) {
  return new Promise((ok, fail) => {
    const r = new FileReader();
    r.onload = () => ok(String(r.result));
    r.onerror = () => fail(r.error);
    r.readAsDataURL(file);
  });
}

// The note under the message box: a refusal (red), or with `ok` only
// good news (an image made smaller to fit, green).
function attachNote(text, ok) {
  $("attach-note").textContent = text || "";
  $("attach-note").hidden = !text;
  $("attach-note").classList.toggle("ok", !!(text && ok));
}

// A picture larger than the server takes, made smaller here: at most
// 2048 px a side, then encoded as WebP (JPEG where the browser cannot
// encode WebP) at a lower quality, then a smaller size, until it fits.
// `null` for a GIF (its animation would be lost), or bytes the browser
// cannot decode (refused as before).
async function smaller(file) {
  if (file.type === "image/gif" || typeof createImageBitmap !== "function") return null;
  let bitmap;
  try { bitmap = await createImageBitmap(file); } catch (_) { return null; }
  let scale = Math.min(1, 2048 / Math.max(bitmap.width, bitmap.height));
  let quality = 0.85;
  let type = "image/webp";
  for (let tries = 0; tries < 12; tries++) {
    const width = Math.max(1, Math.round(bitmap.width * scale));
    const height = Math.max(1, Math.round(bitmap.height * scale));
    const canvas = document.createElement("canvas");
    canvas.width = width;
    canvas.height = height;
    const g = canvas.getContext("2d");
    if (type === "image/jpeg") { g.fillStyle = "#fff"; g.fillRect(0, 0, width, height); }
    g.drawImage(bitmap, 0, 0, width, height);
    const blob = await new Promise((ok) => canvas.toBlob(ok, type, quality));
    if (blob && blob.type !== type && type === "image/webp") { type = "image/jpeg"; continue; }
    if (blob && blob.type === type && blob.size <= IMAGE_CAP) return { blob, width, height };
    if (quality > 0.6) quality -= 0.15;
    else scale *= 0.75;
  }
  return null;
}

// Attaches images to the next message, checked here as the server checks
// them (type, size, how many), each refusal said in plain words.
async function attachFiles(files) {
  const notes = [];
  let shrunk = 0;
  let small = null;
  for (const file of files) {
    const name = file.name || "The pasted image";
    if (!IMAGE_TYPES[file.type]) {
      notes.push(name + " is not an image the agent can read: attach a PNG, JPEG, GIF or WebP image.");
    } else if (file.size > IMAGE_CAP && state.attached.length < MAX_IMAGES && (small = await smaller(file))) {
      try {
        state.attached.push({ name: file.name || "pasted image", url: await dataUrl(small.blob) });
        notes.push(name + " was " + megabytes(file.size) + ": made smaller to fit (" + small.width + "×" + small.height + ", " + megabytes(small.blob.size) + ").");
        shrunk += 1;
      } catch (_) { notes.push(name + " could not be read."); }
    } else if (file.size > IMAGE_CAP) {
      // Just over the limit, the sizes in MB read the same: say the bytes.
      const size = megabytes(file.size) === megabytes(IMAGE_CAP) ? file.size.toLocaleString("en") + " bytes" : megabytes(file.size);
      const limit = IMAGE_CAP < MAX_IMAGE_BYTES
        ? "this server takes images of at most " + megabytes(IMAGE_CAP) + " (its --body-limit)"
        : "an image may be at most " + megabytes(MAX_IMAGE_BYTES);
      notes.push(name + " is " + size + ": " + limit + ". Attach a smaller one (or a screenshot of part of it).");
    } else if (state.attached.length >= MAX_IMAGES) {
      notes.push("A message may carry at most " + MAX_IMAGES + " images: send these first.");
      break;
    } else {
      try { state.attached.push({ name: file.name || "pasted image", url: await dataUrl(file) }); }
      catch (_) { notes.push(name + " could not be read."); }
    }
  }
  // Only "made smaller" notes: good news; any refusal among them: a warning.
  attachNote(notes.join(" "), shrunk === notes.length);
  renderAttachments();
}

// The images attached to the next message, each with a remove button.
function renderAttachments() {
  const ul = $("attachments");
  ul.replaceChildren();
  state.attached.forEach((a, i) => {
    const li = el("li", "attached");
    const img = el("img");
    img.src = a.url;
    img.alt = a.name;
    const remove = button("×", "small", () => { state.attached.splice(i, 1); renderAttachments(); $("input").focus(); });
    remove.setAttribute("aria-label", "Remove " + a.name);
    li.append(img, el("span", "attach-name", a.name), remove);
    ul.append(li);
  });
  ul.hidden = !state.attached.length;
}

// The attached images as the parts of a message (data URLs).
function takeAttachments() {
  const parts = state.attached.map((a) => ({ type: "image", url: a.url }));
  state.attached = [];
  renderAttachments();
  attachNote("");
  return parts;
}

// --------------------------------------------------------------- messages

// Renders a view's messages into `box` (a sub-agent's work nests under its
// `task` call).
function renderMessageList(box, messages, lastAi) {
  const calls = new Map();
  const subs = [];
  for (const m of messages) {
    if (m.role === "system") continue;
    if (m.kind === "network") { subs.push(m); continue; }
    if (m.role === "human") box.append(humanMessage(m, lastAi !== null));
    if (m.role === "ai") {
      if (m.content) {
        const b = aiBubble(m.content);
        if (m.token_usage) b.append(el("div", "meta", usageText(m)));
        box.append(b);
      }
      if (m.cut_off) box.append(cutOffNotice(m === lastAi));
      if (m.empty_answer) box.append(el("div", "msg notice", "The model gave an empty answer (no text, no tool call). Send the message again or rephrase it."));
      if (m.error) box.append(el("div", "msg error", "This step failed: " + m.error));
      for (const call of m.tool_calls || []) {
        const d = toolBox(call);
        calls.set(call.id, d);
        box.append(d);
      }
    }
    if (m.role === "tool") {
      const d = calls.get(m.tool_call_id) || box.appendChild(toolBox({ id: m.tool_call_id, name: m.name || "tool", arguments: "" }));
      finishToolBox(d, m.content, m.status === "error", m.approval && m.approval.status === "responded");
      // What the tool returned as images (read_file on a picture), shown
      // below its line.
      const images = (m.parts || []).filter((p) => p.type === "image").length;
      if (images && m.status !== "error") {
        d.querySelector(".tool-line").textContent = toolSummary(d.dataset.name, d.dataset.args) + " — " + plural(images, "image");
      }
      if (m.parts && m.parts.length) d.after(partsView(m.parts, "tool-images"));
    }
  }
  for (const s of subs) {
    const host = calls.get(s.serves);
    const inner = el("details", "subagent");
    inner.append(el("summary", "", "sub-agent's work (" + plural((s.inner || []).filter((m) => m.role !== "system").length, "message") + ")"));
    const list = el("div", "sub-messages");
    renderMessageList(list, s.inner || [], null);
    inner.append(list);
    (host || box).append(inner);
  }
}

// A message of yours; on the session's own conversation (not a
// sub-agent's) with its buttons: edit or retry it (a new branch below the
// same parent; the old answer stays), put the files back as they were
// before it, and ‹ n/m › between the branches where it was said
// differently.
function humanMessage(m, own) {
  const d = el("div", "msg human");
  d.dataset.node = m.node_id;
  d.append(el("div", "text", m.content));
  if (m.parts && m.parts.length) d.append(partsView(m.parts));
  if (!own || !m.node_id) return d;
  const bar = el("div", "msg-actions");
  const branches = m.branches || [];
  if (branches.length > 1) {
    const at = branches.findIndex((b) => b.node === m.node_id);
    const sw = el("span", "branch-switch");
    const go = (i) => () => switchBranch(branches[i].leaf);
    const prev = button("‹", "small prev-branch", go(at - 1));
    const next = button("›", "small next-branch", go(at + 1));
    prev.disabled = at <= 0;
    next.disabled = at >= branches.length - 1;
    prev.title = "the previous version of this message";
    next.title = "the next version of this message";
    sw.append(prev, el("span", "branch-count", (at + 1) + "/" + branches.length), next);
    bar.append(sw);
  }
  bar.append(
    button("Edit", "small edit-message", () => editMessage(d, m)),
    button("Retry", "small retry-message", () => resend(m, m.content, m.parts || [])),
    button("Rewind files", "small rewind-files", () => rewindFiles(m)),
  );
  d.append(bar);
  return d;
}

// The message said differently, in place: a textarea, its images (each
// can be left out) and Send / Cancel.
function editMessage(d, m) {
  if (state.running || d.querySelector("textarea")) return;
  const area = el("textarea", "edit-text");
  area.value = m.content;
  area.setAttribute("aria-label", "the message, edited");
  let parts = (m.parts || []).slice();
  const images = el("div", "edit-images");
  const showImages = () => {
    images.replaceChildren();
    parts.forEach((p, i) => {
      if (p.type !== "image") return;
      const item = el("span", "edit-image");
      item.append(partsView([p]));
      const remove = button("Leave out", "small leave-out", () => { parts = parts.filter((_, j) => j !== i); showImages(); });
      remove.setAttribute("aria-label", "Leave this image out of the message");
      item.append(remove);
      images.append(item);
    });
  };
  showImages();
  const row = el("div", "msg-actions edit-actions");
  row.append(
    button("Send", "small primary send-edit", () => {
      const t = area.value.trim();
      if (t || parts.some((p) => p.type === "image")) resend(m, t, parts);
    }),
    button("Cancel", "small", () => renderMessages(state.view.messages)),
  );
  d.replaceChildren(area, images, row);
  area.focus();
}

// Sends `text` (and its `parts`) in place of message `m`: the
// conversation goes back to before it (a rewind of the conversation
// only), then the message runs as a new branch; the old one stays in the
// graph.
async function resend(m, text, parts) {
  if (state.running) return;
  try {
    await api("POST", "/api/sessions/" + state.session + "/rewind", { node: m.parent || null, what: "conversation" });
  } catch (e) { status(e.message); return; }
  const box = $("messages");
  const at = box.querySelector('.msg.human[data-node="' + m.node_id + '"]');
  if (at) { while (at.nextSibling) at.nextSibling.remove(); at.remove(); }
  await sendNow(text, parts);
}

// Shows another branch: its leaf becomes the current one.
async function switchBranch(leaf) {
  if (state.running) return;
  try {
    await api("POST", "/api/sessions/" + state.session + "/rewind", { node: leaf, what: "conversation" });
  } catch (e) { status(e.message); return; }
  await refresh();
}

// The files the agent changed from message `m` on, put back as they were
// before it (the conversation stays); files changed outside the agent
// meanwhile are named and kept.
async function rewindFiles(m) {
  if (state.running) return;
  if (!(await confirmDialog("Put the files the agent changed since this message back as they were before it? Files changed by someone else meanwhile are kept.", "Rewind files"))) return;
  let r;
  try {
    r = await api("POST", "/api/sessions/" + state.session + "/rewind", { node: m.parent || null, what: "files" });
  } catch (e) { status(e.message); return; }
  const f = r.files || {};
  const parts = [];
  parts.push(f.restored && f.restored.length ? "Files restored: " + f.restored.join(", ") + "." : "No file to restore.");
  if (f.changed_outside && f.changed_outside.length) parts.push("Changed outside the agent, kept: " + f.changed_outside.join(", ") + ".");
  if (f.not_kept && f.not_kept.length) parts.push("Earlier content not kept: " + f.not_kept.join(", ") + ".");
  state.notes = [el("div", "msg notice rewound", parts.join(" "))];
  await refresh();
}

// A dollar amount as the page shows it ($0.0012; tiny amounts keep two digits).
function dollars(usd) {
  return "$" + (usd >= 0.01 ? usd.toFixed(2) : usd.toPrecision(2));
}

// The session's totals (sub-agents included): tokens, and the cost when
// its models have a price.
function sessionUsageText(u) {
  if (!u || !u.total_tokens) return "";
  let text = (u.estimated_calls ? "~" : "") + u.total_tokens.toLocaleString() + " tokens";
  if (typeof u.cost_usd === "number") text += " · " + dollars(u.cost_usd) + (u.unpriced_models ? "+" : "");
  return text;
}

function usageText(m) {
  const u = m.token_usage;
  const model = m.response_model || m.chat_model_name;
  let text = (model ? model + " · " : "") + (u.estimated ? "~" : "") + u.prompt_tokens + " in · " + u.completion_tokens + " out";
  if (typeof m.cost_usd === "number") text += " · " + dollars(m.cost_usd);
  return text;
}

function cutOffNotice(canContinue) {
  const d = el("div", "msg notice cut-off");
  d.append(el("span", "", "The answer was cut off: the model reached its output limit. "));
  if (canContinue) d.append(button("Continue", "small primary continue", () => continueAnswer()));
  return d;
}

function renderMessages(messages) {
  const box = $("messages");
  box.replaceChildren();
  const lastAi = [...messages].reverse().find((m) => m.role === "ai" && m.kind !== "network");
  const earlier = state.view && state.view.messages_offset;
  if (earlier > 0) box.append(button(earlier + " earlier messages: show them", "small earlier", () => loadEarlier()));
  renderMessageList(box, messages, lastAi);
  if (!messages.some((m) => m.role === "human")) box.append(el("p", "empty hello", "Ask the agent something to start."));
  box.append(...state.notes);
  box.scrollTop = box.scrollHeight;
}

// ---------------------------------------------------------------- sessions

function sessionUrl(id) {
  const url = new URL(location.href);
  if (id) url.searchParams.set("session", id); else url.searchParams.delete("session");
  return url.pathname + url.search;
}

async function loadSessions(more) {
  try {
    const q = $("search").value.trim();
    const offset = more ? state.sessionsShown : 0;
    const page = await api("GET", "/api/sessions?limit=" + PAGE + "&offset=" + offset + (q ? "&q=" + encodeURIComponent(q) : ""));
    const list = $("sessions");
    if (!more) list.replaceChildren();
    for (const s of page.sessions) {
      const li = el("li", s.id === state.session ? "active" : "");
      li.dataset.id = s.id;
      const b = button("", "session-link", () => { openSession(s.id, true); if (narrow()) setDrawer("sidebar", false); });
      b.append(el("span", "session-title", s.name || s.id), el("span", "session-time", when(s.updated_at)));
      b.title = s.name + " — " + s.id;
      if (s.id === state.session) b.setAttribute("aria-current", "true");
      li.append(b);
      list.append(li);
    }
    state.sessionsShown = list.children.length;
    $("more-sessions").hidden = state.sessionsShown >= page.total;
    $("sessions-count").textContent = page.total === 0 ? (q ? "No session matches." : "No sessions yet.") : state.sessionsShown + " of " + page.total;
    status("");
  } catch (e) { status(e.message); }
}

function when(t) {
  const d = new Date(t);
  if (isNaN(d)) return "";
  const same = d.toDateString() === new Date().toDateString();
  return same ? d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }) : d.toLocaleDateString();
}

async function newSession() {
  try {
    const s = await api("POST", "/api/sessions", {});
    await openSession(s.id, true);
    await loadSessions();
    $("input").focus();
    return s.id;
  } catch (e) { status(e.message); return null; }
}

async function openSession(id, push) {
  if (state.running && id !== state.session) { status("A run is going on: stop it or wait before switching sessions."); return; }
  if (id !== state.session) state.notes = [];
  if (id !== state.session) state.graphNodes = 0;
  state.session = id;
  state.expanded.clear();
  $("notice").hidden = true;
  const url = sessionUrl(id);
  if (url !== location.pathname + location.search) history[push ? "pushState" : "replaceState"](null, "", url);
  for (const li of $("sessions").children) {
    const on = li.dataset.id === id;
    li.classList.toggle("active", on);
    li.firstChild.toggleAttribute("aria-current", on);
  }
  $("rename").disabled = $("delete").disabled = !id;
  await refresh();
  reattach();
}

// The session closes (deleted here or elsewhere): a notice says so.
function closeSession(notice) {
  state.session = null;
  state.view = null;
  state.queue = [];
  renderQueue();
  history.replaceState(null, "", sessionUrl(null));
  $("session-name").textContent = "No session";
  $("usage").textContent = "";
  $("rename").disabled = $("delete").disabled = true;
  showMode(null);
  $("messages").replaceChildren();
  renderApprovals([]);
  renderInputRequests([]);
  renderTodos([]);
  renderFiles({});
  $("graph").replaceChildren();
  $("graph-earlier").hidden = true;
  if (notice) { $("notice").textContent = notice; $("notice").hidden = false; }
  loadSessions();
}

async function refresh() {
  if (!state.session) return;
  const id = state.session;
  try {
    const s = await api("GET", "/api/sessions/" + id + (state.graphNodes ? "?graph=" + state.graphNodes : ""));
    if (state.session !== id) return;
    state.view = s;
    $("session-name").textContent = s.name || s.id;
    document.title = (s.name || "session") + " · lc-agent";
    $("usage").textContent = sessionUsageText(s.usage);
    showMode(s.mode);
    renderMessages(s.messages);
    renderTodos(s.todos);
    renderFiles(s.files);
    renderApprovals(s.pending_approvals);
    renderInputRequests(s.pending_input || []);
    await renderGraph($("graph"), s.graph, false);
    if (!$("graph-view").hidden) await renderGraph($("graph-full"), s.graph, true);
    showGraphEarlier(s);
  } catch (e) {
    if (e.status === 404 || e.status === 403) closeSession(e.message);
    else status(e.message);
  }
}

// The view's graph is its latest nodes (300 unless asked): a long
// session's stays drawable; "show earlier" asks for twice as many.
function showGraphEarlier(s) {
  const shown = (s.graph && s.graph.nodes.length) || 0;
  const more = (s.graph_total || 0) - shown;
  $("graph-earlier").hidden = !(more > 0);
  $("graph-earlier").textContent = "Show earlier (" + more + " more nodes)";
}

async function graphEarlier() {
  const shown = (state.view && state.view.graph && state.view.graph.nodes.length) || 300;
  state.graphNodes = Math.min(5000, shown * 2);
  await refresh();
}

// The view is a page of the latest messages: earlier ones come on demand.
async function loadEarlier() {
  const id = state.session;
  const view = state.view;
  if (!id || !view || !(view.messages_offset > 0)) return;
  try {
    const offset = Math.max(0, view.messages_offset - PAGE_MESSAGES);
    const s = await api("GET", "/api/sessions/" + id + "?offset=" + offset + "&limit=" + (view.messages_offset - offset));
    if (state.session !== id || state.view !== view) return;
    view.messages = s.messages.concat(view.messages);
    view.messages_offset = offset;
    renderMessages(view.messages);
    $("messages").scrollTop = 0;
  } catch (e) { status(e.message); }
}

// Watches the open session while no run goes on: a change made elsewhere
// shows up, a deletion closes it with a notice.
async function watch() {
  if (!state.session || state.running || document.hidden) return;
  const id = state.session;
  try {
    // Only what changed: the server answers `unchanged` without reading
    // the session while its revision is the one shown.
    const since = state.view && state.view.revision != null ? "?since=" + state.view.revision : "";
    const s = await api("GET", "/api/sessions/" + id + since);
    if (state.session !== id || state.running || s.unchanged) return;
    if (!state.view || s.revision !== state.view.revision) await refresh();
  } catch (e) {
    if (state.session === id && (e.status === 404 || e.status === 403)) closeSession("This session was deleted (in another window or by another client), so it was closed.");
  }
}

function startRename() {
  $("rename-input").value = $("session-name").textContent;
  $("rename-form").hidden = false;
  $("session-name").hidden = true;
  $("rename-input").focus();
  $("rename-input").select();
}

function endRename() {
  $("rename-form").hidden = true;
  $("session-name").hidden = false;
}

async function rename(event) {
  event.preventDefault();
  const name = $("rename-input").value.trim();
  if (!name || !state.session) return endRename();
  try {
    const r = await api("PATCH", "/api/sessions/" + state.session, { name });
    $("session-name").textContent = r.name;
    endRename();
    $("session-name").focus();
    await loadSessions();
  } catch (e) { status(e.message); }
}

// The session's permission mode (modes.rs on the server): shown in the
// switcher; bypass is marked, and every run in it says so.
function showMode(mode) {
  $("mode").disabled = !mode;
  $("mode").value = mode || "default";
  $("mode").classList.toggle("danger", mode === "bypass");
  document.body.dataset.mode = mode || "";
}

async function setMode() {
  if (!state.session) return;
  const mode = $("mode").value;
  try {
    const r = await api("PATCH", "/api/sessions/" + state.session, { mode });
    if (state.view) state.view.mode = r.mode;
    if (state.view && r.revision != null) state.view.revision = r.revision;
    showMode(r.mode);
    status("Mode: " + r.mode + (r.mode === "plan" ? " (read only: the agent proposes a plan for you to approve)" : ""));
  } catch (e) {
    status(e.message);
    showMode(state.view ? state.view.mode : null);
  }
}

function confirmDialog(text, yes) {
  return new Promise((resolve) => {
    const box = $("confirm");
    const back = document.activeElement;
    $("confirm-text").textContent = text;
    $("confirm-yes").textContent = yes;
    box.hidden = false;
    $("confirm-no").focus();
    const done = (answer) => {
      box.hidden = true;
      $("confirm-yes").onclick = $("confirm-no").onclick = box.onkeydown = null;
      if (back) back.focus();
      resolve(answer);
    };
    $("confirm-yes").onclick = () => done(true);
    $("confirm-no").onclick = () => done(false);
    box.onkeydown = (e) => { if (e.key === "Escape") done(false); };
  });
}

async function deleteSession() {
  if (!state.session) return;
  const name = $("session-name").textContent;
  if (!(await confirmDialog('Delete the session "' + name + '"? Its messages and graph are gone for good.', "Delete"))) return;
  try {
    await api("DELETE", "/api/sessions/" + state.session);
    closeSession('Deleted "' + name + '".');
  } catch (e) { status(e.message); }
}

// ------------------------------------------------------------ side panel

function renderTodos(todos) {
  const ul = $("todos");
  ul.replaceChildren();
  if (!todos.length) ul.append(el("li", "empty", "none"));
  const mark = { completed: "✓ ", in_progress: "▸ ", pending: "○ " };
  for (const t of todos) {
    const li = el("li", t.status, (mark[t.status] || "") + t.content);
    ul.append(li);
  }
}

function renderFiles(files) {
  const ul = $("files");
  ul.replaceChildren();
  $("file-view").hidden = true;
  const paths = Object.keys(files);
  if (!paths.length) ul.append(el("li", "empty", "none"));
  for (const path of paths) {
    const li = el("li");
    li.append(button(path, "file-link", () => {
      const v = $("file-view");
      v.hidden = false;
      const file = files[path];
      if (file.omitted && state.session) {
        // Large files come one at a time, when asked.
        v.textContent = "(loading " + file.bytes + " bytes…)";
        api("GET", "/api/sessions/" + state.session + "?limit=1&file=" + encodeURIComponent(path))
          .then((s) => { const t = s.files[path] && s.files[path].content; v.textContent = t == null ? "(not shown: binary)" : t; })
          .catch((e) => { v.textContent = e.message; });
        return;
      }
      v.textContent = file.content === null ? "(not shown: binary)" : file.content;
    }));
    ul.append(li);
  }
}

function setDrawer(id, open) {
  const toggle = id === "sidebar" ? $("toggle-sessions") : $("toggle-panel");
  document.body.classList.toggle(id + "-open", open);
  document.body.classList.toggle(id + "-closed", !open);
  toggle.setAttribute("aria-expanded", String(open));
  if (open && narrow()) {
    setDrawer(id === "sidebar" ? "panel" : "sidebar", false);
    const first = $(id).querySelector("button, input");
    if (first) first.focus();
  }
}

function drawerOpen(id) {
  return narrow() ? document.body.classList.contains(id + "-open") : !document.body.classList.contains(id + "-closed");
}

// -------------------------------------------------------------- approvals

// Line diff of two texts (longest common subsequence; small inputs).
function lineDiff(a, b) {
  const x = a.split("\n"), y = b.split("\n");
  if (x.length * y.length > 250000) return [...x.map((l) => ["-", l]), ...y.map((l) => ["+", l])];
  const n = x.length, m = y.length;
  const dp = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) dp[i][j] = x[i] === y[j] ? dp[i + 1][j + 1] + 1 : Math.max(dp[i + 1][j], dp[i][j + 1]);
  const out = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) { out.push([" ", x[i]]); i++; j++; }
    else if (dp[i + 1][j] >= dp[i][j + 1]) out.push(["-", x[i++]]);
    else out.push(["+", y[j++]]);
  }
  while (i < n) out.push(["-", x[i++]]);
  while (j < m) out.push(["+", y[j++]]);
  return out;
}

function diffView(oldText, newText) {
  const pre = el("pre", "diff");
  pre.setAttribute("aria-label", "Changes: lines starting with minus go, plus lines come");
  for (const [sign, line] of lineDiff(oldText, newText)) {
    pre.append(el("span", sign === "-" ? "del" : sign === "+" ? "add" : "same", sign + " " + line + "\n"));
  }
  return pre;
}

// What a call would do, shown so a person can judge it.
function callPreview(name, args) {
  const a = parseArgs(args);
  const box = el("div", "preview");
  if (a && name === "write_file" && typeof a.content === "string") {
    box.append(el("div", "file-head", (a.file_path || "(no path)") + " — " + plural(countLines(a.content), "line")));
    box.append(el("pre", "file-body", a.content));
  } else if (a && name === "edit_file" && typeof a.old_string === "string") {
    box.append(el("div", "file-head", (a.file_path || "(no path)") + (a.replace_all ? " — every occurrence" : "")));
    box.append(diffView(a.old_string, String(a.new_string ?? "")));
  } else {
    box.append(el("pre", "args", pretty(args)));
  }
  return box;
}

// The form to edit a call's arguments: one field per argument.
function editForm(p) {
  const args = parseArgs(p.tool_call.arguments) || {};
  const form = el("form", "decision-form edit-form");
  for (const [key, value] of Object.entries(args)) {
    const id = "arg-" + p.node_id + "-" + key;
    const label = el("label", "", key);
    label.htmlFor = id;
    const isText = typeof value === "string";
    const field = el(isText && !value.includes("\n") && value.length < 80 ? "input" : "textarea");
    field.id = id;
    field.name = key;
    field.dataset.json = isText ? "" : "1";
    field.value = isText ? value : JSON.stringify(value, null, 2);
    if (field.tagName === "TEXTAREA") field.rows = Math.min(12, Math.max(2, countLines(field.value)));
    form.append(label, field);
  }
  if (!Object.keys(args).length) {
    const field = el("textarea");
    field.name = "";
    field.dataset.json = "raw";
    field.value = pretty(p.tool_call.arguments);
    field.setAttribute("aria-label", "Arguments (JSON)");
    form.append(field);
  }
  const go = el("button", "primary", "Run with these arguments");
  go.type = "submit";
  form.append(go, button("Cancel", "", () => form.remove()));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    let edited = {};
    try {
      for (const f of form.querySelectorAll("input, textarea")) {
        if (f.dataset.json === "raw") edited = JSON.parse(f.value);
        else edited[f.name] = f.dataset.json ? JSON.parse(f.value) : f.value;
      }
    } catch (err) { status("An argument is not valid JSON: " + err.message); return; }
    decide(p.node_id, "edit", { arguments: edited });
  });
  return form;
}

function textForm(p, kind, label, go) {
  const form = el("form", "decision-form " + kind + "-form");
  const id = kind + "-" + p.node_id;
  const l = el("label", "", label);
  l.htmlFor = id;
  const field = el("textarea");
  field.id = id;
  field.rows = 2;
  if (kind === "respond") field.required = true;
  const b = el("button", kind === "reject" ? "danger" : "primary", go);
  b.type = "submit";
  form.append(l, field, b, button("Cancel", "", () => form.remove()));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const text = field.value.trim();
    if (kind === "respond" && !text) return;
    decide(p.node_id, kind, text ? { message: text } : {});
  });
  return form;
}

function renderApprovals(pending) {
  const box = $("approvals");
  box.replaceChildren();
  box.hidden = !pending.length;
  if (!pending.length) return;
  box.append(el("h3", "", pending.length === 1 ? "A call waits for your decision" : pending.length + " calls wait for your decision"));
  for (const p of pending) {
    const div = el("div", "approval");
    div.dataset.nodeId = p.node_id;
    div.append(el("strong", "tool-name", p.tool_call.name), callPreview(p.tool_call.name, p.tool_call.arguments));
    const row = el("div", "decisions");
    const open = (form) => {
      for (const f of div.querySelectorAll(".decision-form")) f.remove();
      div.append(form);
      const first = form.querySelector("input, textarea");
      if (first) first.focus();
    };
    if (p.allowed.includes("approve")) row.append(button("Approve", "approve primary", () => decide(p.node_id, "approve")));
    if (p.allowed.includes("edit")) row.append(button("Edit arguments", "edit", () => open(editForm(p))));
    if (p.allowed.includes("reject")) row.append(button("Reject…", "reject danger", () => open(textForm(p, "reject", "Why? (the model reads this; optional)", "Reject the call"))));
    if (p.allowed.includes("respond")) row.append(button("Answer instead…", "respond", () => open(textForm(p, "respond", "Your answer, given to the model as the call's result", "Send the answer"))));
    div.append(row);
    box.append(div);
  }
}

// ------------------------------------------------------ requests for input
// An MCP server asks for values in the middle of a tool call (its
// `elicitation/create`): the run shows `input_requested` with a flat
// JSON Schema form; the person sends, declines or cancels, and the call
// goes on (`POST /api/sessions/{id}/input/{input}`).

function renderInputRequests(open) {
  const box = $("input-requests");
  const shown = new Set([...box.querySelectorAll(".input-request")].map((d) => d.dataset.input));
  const wanted = new Set(open.map((r) => r.id));
  for (const d of box.querySelectorAll(".input-request")) if (!wanted.has(d.dataset.input)) d.remove();
  for (const r of open) if (!shown.has(r.id)) box.append(inputCard(r));
  const count = box.querySelectorAll(".input-request").length;
  let head = box.querySelector("h3");
  if (!head) { head = el("h3"); box.prepend(head); }
  head.textContent = count === 1 ? "A tool asks you for input" : count + " tools ask you for input";
  box.hidden = count === 0;
}

function addInputRequest(r) {
  renderInputRequests([...openInputRequests().filter((x) => x.id !== r.id), r]);
}

function dropInputRequest(id) {
  renderInputRequests(openInputRequests().filter((x) => x.id !== id));
}

function openInputRequests() {
  return [...$("input-requests").querySelectorAll(".input-request")].map((d) => d.request);
}

// One form field of a flat schema property: [its element, a reader of its value].
function inputField(name, prop, required) {
  const label = el("label", "field");
  label.append(el("span", "", (prop.title || name) + (required ? " *" : "")));
  let input, read;
  const choices = Array.isArray(prop.enum)
    ? prop.enum.map((v, i) => [v, (prop.enumNames && prop.enumNames[i]) || v])
    : Array.isArray(prop.oneOf) ? prop.oneOf.map((o) => [o.const, o.title || o.const]) : null;
  const many = prop.type === "array" && prop.items
    ? (Array.isArray(prop.items.enum) ? prop.items.enum.map((v) => [v, v])
      : Array.isArray(prop.items.anyOf) ? prop.items.anyOf.map((o) => [o.const, o.title || o.const]) : null)
    : null;
  if (many) {
    input = el("div", "choices");
    const boxes = many.map(([value, title]) => {
      const l = el("label"), c = el("input");
      c.type = "checkbox"; c.value = value;
      c.checked = Array.isArray(prop.default) && prop.default.includes(value);
      l.append(c, " " + title);
      input.append(l);
      return c;
    });
    read = () => boxes.filter((c) => c.checked).map((c) => c.value);
  } else if (choices) {
    input = el("select");
    if (!required || prop.default === undefined) {
      const none = el("option", "", "—");
      none.value = "";
      input.append(none);
    }
    for (const [value, title] of choices) {
      const o = el("option", "", title); o.value = value; input.append(o);
    }
    if (prop.default !== undefined) input.value = prop.default;
    read = () => input.value === "" ? undefined : input.value;
  } else if (prop.type === "boolean") {
    input = el("input"); input.type = "checkbox";
    input.checked = prop.default === true;
    read = () => input.checked;
  } else if (prop.type === "integer" || prop.type === "number") {
    input = el("input"); input.type = "number";
    input.step = prop.type === "integer" ? "1" : "any";
    if (prop.minimum !== undefined) input.min = prop.minimum;
    if (prop.maximum !== undefined) input.max = prop.maximum;
    if (prop.default !== undefined) input.value = prop.default;
    read = () => input.value === "" ? undefined : Number(input.value);
  } else {
    input = el("input");
    input.type = { email: "email", uri: "url", date: "date" }[prop.format] || "text";
    if (prop.minLength !== undefined) input.minLength = prop.minLength;
    if (prop.maxLength !== undefined) input.maxLength = prop.maxLength;
    if (prop.default !== undefined) input.value = prop.default;
    read = () => input.value === "" ? undefined : input.value;
  }
  input.name = name;
  input.required = Boolean(required) && prop.type !== "boolean" && !many;
  label.append(input);
  if (prop.description) label.append(el("small", "", prop.description));
  return [label, read];
}

function inputCard(r) {
  const div = el("form", "input-request");
  div.dataset.input = r.id;
  div.request = r;
  div.append(el("div", "asker", "The MCP server " + r.server + " asks:"), el("p", "ask-message", r.message));
  const schema = r.requested_schema || {};
  const required = new Set(schema.required || []);
  const readers = [];
  for (const [name, prop] of Object.entries(schema.properties || {})) {
    const [field, read] = inputField(name, prop || {}, required.has(name));
    div.append(field);
    readers.push([name, read]);
  }
  const error = el("p", "ask-error");
  error.setAttribute("role", "alert");
  error.hidden = true;
  const send = async (action) => {
    const body = { action };
    if (action === "accept") {
      body.content = {};
      for (const [name, read] of readers) {
        const v = read();
        if (v !== undefined) body.content[name] = v;
      }
    }
    for (const b of div.querySelectorAll("button")) b.disabled = true;
    error.hidden = true;
    try {
      await api("POST", "/api/sessions/" + state.session + "/input/" + r.id, body);
      dropInputRequest(r.id);
    } catch (e) {
      error.textContent = e.status === 400 || e.status === 404 ? e.raw : e.message;
      error.hidden = false;
      if (e.status === 404) setTimeout(() => dropInputRequest(r.id), 4000);
    } finally {
      for (const b of div.querySelectorAll("button")) b.disabled = false;
    }
  };
  const row = el("div", "decisions");
  const ok = button("Send", "primary", null);
  ok.type = "submit";
  row.append(ok, button("Decline", "", () => send("decline")), button("Cancel the call", "danger", () => send("cancel")));
  div.append(row, error);
  div.addEventListener("submit", (e) => { e.preventDefault(); send("accept"); });
  return div;
}

async function decide(nodeId, decision, extra) {
  await run("/api/sessions/" + state.session + "/approvals", { decisions: [Object.assign({ node_id: nodeId, decision }, extra || {})] });
}

// -------------------------------------------------------------------- theme

// Dark or light: the page's own choice (the header's ◐, kept in
// localStorage), else the system's (prefers-color-scheme). The stylesheet
// reads `data-theme` on <html>; without it, the system's choice applies.
function currentTheme() {
  const chosen = localStorage.getItem("lc-agent-theme");
  if (chosen === "dark" || chosen === "light") return chosen;
  return window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

function applyTheme(redraw) {
  const chosen = localStorage.getItem("lc-agent-theme");
  if (chosen === "dark" || chosen === "light") document.documentElement.dataset.theme = chosen;
  else delete document.documentElement.dataset.theme;
  const dark = currentTheme() === "dark";
  $("theme").setAttribute("aria-pressed", dark ? "true" : "false");
  if (window.mermaid) {
    // The view bounds the graph (300 nodes, more on "show earlier"):
    // Mermaid's own caps (50,000 characters, 500 edges) would refuse it.
    window.mermaid.initialize({ startOnLoad: false, securityLevel: "strict", theme: dark ? "dark" : "default", maxTextSize: 5000000, maxEdges: 50000, flowchart: { htmlLabels: false }, themeVariables: { fontSize: "13px" } });
  }
  if (redraw && state.view && state.view.graph) {
    renderGraph($("graph"), state.view.graph, false);
    if (!$("graph-view").hidden) renderGraph($("graph-full"), state.view.graph, true);
  }
}

function toggleTheme() {
  localStorage.setItem("lc-agent-theme", currentTheme() === "dark" ? "light" : "dark");
  applyTheme(true);
}

// -------------------------------------------------------------------- graph

function mermaidText(text) {
  return String(text).replace(/#/g, "#35;").replace(/"/g, "#quot;").replace(/</g, "#lt;").replace(/>/g, "#gt;").replace(/[\r\n]+/g, " ");
}

// Mermaid source of a graph JSON; `ids` maps mermaid ids to node ids.
function graphSource(graph, full, ids) {
  const lines = ["flowchart TD"];
  const edges = [];
  const off = []; // nodes of other branches: drawn faded
  const walk = (g, prefix, depth) => {
    const local = new Map();
    g.nodes.forEach((n, i) => local.set(n.id, prefix + i));
    g.nodes.forEach((n) => {
      const mid = local.get(n.id);
      ids.set(mid, n);
      const label = (n.kind === n.name ? n.kind : n.kind + " · " + n.name) + (n.excerpt ? ": " + n.excerpt : n.state === "ran" ? "" : " (" + n.state + ")");
      const openable = full && n.inner && n.inner.nodes.length;
      if (openable && state.expanded.has(n.id)) {
        lines.push("  subgraph " + mid + ' ["⊟ ' + mermaidText(n.kind + " · " + n.name) + '"]');
        lines.push("  direction TB");
        walk(n.inner, mid + "_", depth + 1);
        lines.push("  end");
        lines.push("  style " + mid + " fill:#f4f6ff,stroke:#6b7cff");
      } else {
        lines.push("  " + mid + '["' + (openable ? "⊞ " : "") + mermaidText(label) + '"]:::' + n.state);
        if (n.off_branch) off.push(mid);
      }
      for (const p of n.parents) if (local.has(p)) edges.push("  " + local.get(p) + " --> " + mid);
    });
  };
  walk(graph, "n", 0);
  lines.push(...edges);
  if (currentTheme() === "dark") {
    lines.push("  classDef ran fill:#173124,stroke:#3fb950,color:#d2f4dc");
    lines.push("  classDef failed fill:#3b1d1d,stroke:#ff7b72,color:#ffd8d3");
    lines.push("  classDef held fill:#3a2f12,stroke:#d29922,color:#f8e3a1");
    lines.push("  classDef pending fill:#1f252d,stroke:#8b949e,stroke-dasharray:4 3,color:#c9d1d9");
  } else {
    lines.push("  classDef ran fill:#e6f4ea,stroke:#2f8f46,color:#123");
    lines.push("  classDef failed fill:#fde8e8,stroke:#b42318,color:#5a0d0d");
    lines.push("  classDef held fill:#fff4d6,stroke:#b7791f,color:#4a3300");
    lines.push("  classDef pending fill:#f1f1f4,stroke:#888,stroke-dasharray:4 3,color:#333");
  }
  if (off.length) {
    lines.push("  classDef off opacity:0.45,stroke-dasharray:5 4");
    lines.push("  class " + off.join(",") + " off");
  }
  return lines.join("\n");
}

async function renderGraph(box, graph, full) {
  if (!graph) { box.replaceChildren(); return; }
  const ids = new Map();
  const text = graphSource(graph, full, ids);
  if (!window.mermaid) { box.replaceChildren(el("pre", "", text)); return; }
  try {
    const { svg } = await window.mermaid.render("graph-svg-" + (++state.graphs), text);
    box.innerHTML = svg; // mermaid's own output (securityLevel strict; labels escaped above)
  } catch (e) { box.replaceChildren(el("pre", "", text)); return; }
  if (!full) return;
  const svg = box.querySelector("svg");
  const vb = svg && svg.viewBox && svg.viewBox.baseVal;
  if (vb && vb.width) { svg.style.width = vb.width + "px"; svg.style.height = vb.height + "px"; svg.removeAttribute("width"); }
  for (const g of box.querySelectorAll("g.node, g.cluster")) {
    const m = /(?:flowchart-)?(n[\d_]*\d)(?:-\d+)?$/.exec(g.id || "");
    const node = m && ids.get(m[1]);
    if (!node) continue;
    g.classList.add("clickable");
    g.setAttribute("tabindex", "0");
    g.setAttribute("role", "button");
    g.setAttribute("aria-label", node.kind + " " + node.name + ", " + node.state);
    const open = (e) => {
      e.stopPropagation();
      if (node.inner && node.inner.nodes.length) {
        if (state.expanded.has(node.id)) state.expanded.delete(node.id); else state.expanded.add(node.id);
        renderGraph(box, state.view && state.view.graph, true).then(fit);
      }
      showNode(node.id);
    };
    g.addEventListener("click", open);
    g.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); open(e); } });
  }
  applyZoom();
}

async function showNode(nodeId) {
  const box = $("node-detail");
  try {
    const n = await api("GET", "/api/sessions/" + state.session + "/nodes/" + nodeId);
    box.replaceChildren(el("h3", "", n.kind + " · " + n.name), el("p", "state " + n.state, n.state));
    // Base64 image data is shown as the image, not as pages of letters.
    const json = (v) => JSON.stringify(v, (k, x) => (k === "data" && typeof x === "string" && x.length > 120 ? "(" + x.length + " characters of base64)" : x), 2);
    const section = (title, value) => {
      const d = el("details");
      d.open = title !== "input";
      d.append(el("summary", "", title));
      // A message's text reads as text, its images as images; the rest as JSON.
      if (value && typeof value.content === "string") {
        const rest = Object.assign({}, value);
        delete rest.content;
        d.append(el("pre", "content", value.content || "(no text)"));
        if (Array.isArray(value.parts) && value.parts.length) d.append(partsView(value.parts));
        d.append(el("pre", "", json(rest)));
      } else {
        d.append(el("pre", "", typeof value === "string" ? value : json(value)));
      }
      box.append(d);
    };
    section("output", n.output);
    section("input", n.input);
    section("metadata", n.metadata);
  } catch (e) { box.replaceChildren(el("p", "msg error", e.message)); }
}

function applyZoom() {
  const z = state.zoom;
  $("graph-full").style.transform = "translate(" + z.x + "px," + z.y + "px) scale(" + z.scale + ")";
}

// Scales the graph to fit the canvas (never above its natural size).
function fit() {
  const svg = $("graph-full").querySelector("svg");
  const canvas = $("graph-canvas");
  if (!svg) return;
  const w = parseFloat(svg.style.width) || svg.getBoundingClientRect().width;
  const h = parseFloat(svg.style.height) || svg.getBoundingClientRect().height;
  // The width fits; a tall graph pans down (text stays readable).
  const scale = Math.min(1, (canvas.clientWidth - 32) / w, Math.max((canvas.clientHeight - 32) / h, 0.6));
  state.zoom = { scale: Math.max(0.2, scale), x: Math.max(0, (canvas.clientWidth - w * scale) / 2 - 16), y: 0 };
  applyZoom();
}

function zoom(factor) {
  state.zoom.scale = Math.min(4, Math.max(0.2, state.zoom.scale * factor));
  applyZoom();
}

async function openGraph() {
  if (!state.view) return;
  $("graph-view").hidden = false;
  document.body.classList.add("modal-open");
  state.zoom = { scale: 1, x: 0, y: 0 };
  await renderGraph($("graph-full"), state.view.graph, true);
  fit();
  $("graph-close").focus();
}

function closeGraph() {
  $("graph-view").hidden = true;
  document.body.classList.remove("modal-open");
  $("open-graph").focus();
}

(function panAndZoom() {
  const canvas = $("graph-canvas");
  let drag = null;
  canvas.addEventListener("wheel", (e) => { e.preventDefault(); zoom(e.deltaY < 0 ? 1.1 : 1 / 1.1); }, { passive: false });
  canvas.addEventListener("pointerdown", (e) => {
    if (e.target.closest(".clickable")) return;
    drag = { x: e.clientX - state.zoom.x, y: e.clientY - state.zoom.y };
    canvas.setPointerCapture(e.pointerId);
  });
  canvas.addEventListener("pointermove", (e) => {
    if (!drag) return;
    state.zoom.x = e.clientX - drag.x;
    state.zoom.y = e.clientY - drag.y;
    applyZoom();
  });
  canvas.addEventListener("pointerup", () => { drag = null; });
  canvas.addEventListener("keydown", (e) => {
    const step = 40;
    const moves = { ArrowLeft: [step, 0], ArrowRight: [-step, 0], ArrowUp: [0, step], ArrowDown: [0, -step] };
    if (e.target !== canvas) return;
    if (moves[e.key]) { state.zoom.x += moves[e.key][0]; state.zoom.y += moves[e.key][1]; applyZoom(); e.preventDefault(); }
    if (e.key === "+" || e.key === "=") zoom(1.2);
    if (e.key === "-") zoom(1 / 1.2);
  });
})();

// ------------------------------------------------------------------- runs

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
      let name = "message", data = "", id = null;
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data += line.slice(5).trimStart();
        else if (line.startsWith("id:")) id = Number(line.slice(3).trim());
      }
      if (data) onEvent(name, JSON.parse(data), id);
    }
  }
}

function step(text) {
  $("step").hidden = !text;
  $("step-text").textContent = text || "";
}

function setRunning(on) {
  state.running = on;
  $("stop").hidden = !on;
  $("stop").disabled = false;
  $("send").textContent = on ? "Queue" : "Send";
  $("send").title = on ? "The agent is working: this message is sent when the run ends" : "";
  document.body.classList.toggle("running", on);
  for (const b of $("approvals").querySelectorAll("button")) b.disabled = on;
}

// Posts to a run endpoint and shows its events as they come; without a
// body, follows a run that is going on (GET /api/runs/{id}/events), its
// events from the start, skipping the nodes `seen` already shows.
async function run(path, body, seen) {
  if (state.running) return false;
  seen = seen || new Set();
  setRunning(true);
  step("Sending…");
  const box = $("messages");
  const hello = box.querySelector(".hello");
  if (hello) hello.remove();
  state.notes = [];
  const note = (cls, text) => { const n = el("div", "msg " + cls, text); state.notes.push(n); box.append(n); box.scrollTop = box.scrollHeight; return n; };
  let live = null, liveText = "", paint = 0;
  const tools = new Map();
  const flush = () => { paint = 0; if (live) { markdown(live, liveText); box.scrollTop = box.scrollHeight; } };
  let ok = true;
  try {
    let r;
    const init = body === undefined
      ? { headers: headers(false) }
      : { method: "POST", headers: headers(true), body: JSON.stringify(body) };
    try { r = await fetch(path, init); }
    catch (_) { throw new ApiFailure(0, ""); }
    if (!r.ok) throw new ApiFailure(r.status, await errorText(r));
    step("Thinking…");
    // Every event of a run has a number: a stream cut short (a server
    // that stopped, a network that dropped) is picked up where it ended,
    // from whichever server answers (GET /api/runs/{id}/events).
    let lastSeq = 0, ended = false;
    const onEvent = (name, data, id) => {
      if (id) lastSeq = id;
      if (name === "done" || name === "error") ended = true;
      handle(name, data);
    };
    await readEvents(r, onEvent);
    for (let tries = 0; !ended && tries < 30; tries++) {
      step("The connection dropped: reattaching to the run…");
      await new Promise((ok) => setTimeout(ok, 1000));
      try {
        const runs = await api("GET", "/api/sessions/" + state.session + "/runs?limit=1");
        const current = runs.runs && runs.runs[0];
        if (!current) break;
        const again = await fetch("/api/runs/" + current.id + "/events?after=" + lastSeq, { headers: headers(false) });
        if (again.ok) await readEvents(again, onEvent);
      } catch (_) { /* the server is not back yet: try again */ }
    }
    function handle(name, data) {
      if (data && data.node_id && seen.has(data.node_id)) return;
      if (name === "text") {
        if (!live || live.dataset.node !== data.node_id) {
          live = el("div", "msg ai streaming");
          live.dataset.node = data.node_id;
          liveText = "";
          box.append(live);
        }
        liveText += data.text;
        if (!paint) paint = setTimeout(flush, 40);
        // How many streamed pieces this page showed (tests read it).
        document.body.dataset.deltas = String(Number(document.body.dataset.deltas || 0) + 1);
        step("Writing…");
      } else if (name === "node_added") {
        if (data.kind === "summary") step("Summarizing the conversation so far…");
        else if (data.kind === "chat") step("Thinking…");
      } else if (name === "run_started") {
        if (data && data.warning) note("notice warning", "Warning: " + data.warning);
      } else if (name === "summary_written") {
        note("notice", "The conversation so far was summarized (" + plural(data.summarized, "message") + ") to fit the model's window.");
      } else if (name === "tool_call_started") {
        // A page that reattached already drew the call from the session view.
        const drawn = [...box.querySelectorAll("details.tool")].find((t) => t.dataset.callId === data.tool_call_id);
        const d = drawn || toolBox({ id: data.tool_call_id, name: data.name, arguments: "" });
        d.classList.add("live");
        tools.set(data.tool_call_id, d);
        if (!drawn) box.append(d);
        step("Calling " + data.name + "…");
      } else if (name === "tool_call_finished") {
        const d = tools.get(data.tool_call_id);
        if (d) {
          d.classList.remove("live");
          d.classList.toggle("error", data.status === "error");
          d.querySelector(".tool-line").textContent = data.name + (data.status === "error" ? " — error" : " — done") + " (" + Math.round(data.duration_ms) + " ms)";
        }
        step("Thinking…");
      } else if (name === "answer_cut_off") {
        flush();
        box.append(cutOffNotice(false));
      } else if (name === "empty_answer") {
        box.append(el("div", "msg notice", "The model gave an empty answer (no text, no tool call); the run goes on."));
      } else if (name === "node_failed") {
        step("A step failed: " + data.error);
      } else if (name === "input_requested") {
        step("Waiting for your input");
        addInputRequest(data);
      } else if (name === "input_answered") {
        dropInputRequest(data.id);
        step("Thinking…");
      } else if (name === "approval_needed") {
        step("Waiting for your approval");
        renderApprovals(data.pending);
      } else if (name === "stopped") {
        note("notice stopped", "Stopped. What ran is kept; send a message to go on.");
      } else if (name === "handed_back") {
        step("This server is stopping: the run goes on elsewhere…");
      } else if (name === "error") {
        ok = false;
        note("error", plainError(data.status, data.message));
      }
    }
    if (paint) { clearTimeout(paint); flush(); }
    status("");
  } catch (e) {
    ok = false;
    note("error", e.message);
  } finally {
    step("");
    setRunning(false);
  }
  await refresh();
  await loadSessions();
  sendQueued();
  return ok;
}

// A page opened (or reloaded) while the session's run goes on follows it:
// the messages so far, the step line, the Stop button; sending waits.
async function reattach() {
  if (state.running || !state.session) return;
  const id = state.session;
  try {
    const runs = await api("GET", "/api/sessions/" + id + "/runs?limit=1");
    const current = runs.runs && runs.runs[0];
    if (!current || state.session !== id || state.running) return;
    if (current.status !== "queued" && current.status !== "running") return;
    const seen = new Set(((state.view && state.view.messages) || []).map((m) => m.node_id).filter(Boolean));
    await run("/api/runs/" + current.id + "/events", undefined, seen);
  } catch (_) { /* nothing to follow */ }
}

async function stopRun() {
  if (!state.running || !state.session) return;
  $("stop").disabled = true;
  step("Stopping…");
  try { await api("POST", "/api/sessions/" + state.session + "/stop"); }
  catch (e) { status(e.message); }
}

async function continueAnswer() {
  if (!state.session) return;
  await run("/api/sessions/" + state.session + "/continue", {});
}

// ----------------------------------------------------------------- composer

function renderQueue() {
  const ul = $("queue");
  ul.replaceChildren();
  state.queue.forEach((q, i) => {
    const li = el("li", "queued");
    const images = q.parts.filter((p) => p.type === "image").length;
    const text = q.text + (images ? (q.text ? " " : "") + "[" + plural(images, "image") + "]" : "");
    li.append(el("span", "queued-label", "queued"), el("span", "queued-text", text));
    li.append(button("×", "small", () => { state.queue.splice(i, 1); renderQueue(); }));
    li.lastChild.setAttribute("aria-label", "Remove this queued message");
    ul.append(li);
  });
}

// Sends the next queued message once nothing runs and no call waits.
function sendQueued() {
  if (state.running || !state.queue.length || !state.session) return;
  if (state.view && state.view.pending_approvals.length) {
    status("Queued messages wait until the pending calls are decided.");
    return;
  }
  const q = state.queue.shift();
  renderQueue();
  sendNow(q.text, q.parts);
}

// Sends a message: its text, and its images as parts (data URLs; the
// server keeps them in the session).
async function sendNow(text, parts) {
  parts = parts || [];
  const bubble = el("div", "msg human");
  bubble.append(el("div", "text", text));
  if (parts.length) bubble.append(partsView(parts));
  $("messages").append(bubble);
  $("messages").scrollTop = $("messages").scrollHeight;
  const body = { content: text };
  if (parts.length) body.parts = parts;
  await run("/api/sessions/" + state.session + "/messages", body);
}

async function send(event) {
  event.preventDefault();
  const text = $("input").value.trim();
  if (!text && !state.attached.length) return;
  // A message with its images must fit in the server's body limit.
  const size = new TextEncoder().encode(JSON.stringify({ content: text, parts: state.attached.map((a) => ({ type: "image", url: a.url })) })).length;
  if (state.attached.length && size > BODY_LIMIT) {
    attachNote("This message with its images is " + megabytes(size) + "; this server takes at most " + megabytes(BODY_LIMIT) + " per message (its --body-limit). Leave an image out, or send the images one at a time.");
    return;
  }
  const attached = state.attached.slice();
  const parts = takeAttachments();
  $("input").value = "";
  if (!state.session && !(await newSession())) {
    $("input").value = text;
    state.attached = attached;
    renderAttachments();
    return;
  }
  // Never dropped: during a run (or while calls wait) it is queued.
  if (state.running || (state.view && state.view.pending_approvals.length)) {
    state.queue.push({ text, parts });
    renderQueue();
    sendQueued();
    return;
  }
  await sendNow(text, parts);
}

// -------------------------------------------------------------------- start

(function start() {
  const params = new URLSearchParams(location.search);
  if (params.has("token")) {
    localStorage.setItem("lc-agent-token", params.get("token"));
    params.delete("token");
    history.replaceState(null, "", location.pathname + (params.toString() ? "?" + params : ""));
  }
  $("token").value = localStorage.getItem("lc-agent-token") || "";
  $("token").addEventListener("change", () => {
    localStorage.setItem("lc-agent-token", $("token").value.trim());
    loadSessions();
    refresh();
  });
  applyTheme();
  $("theme").addEventListener("click", toggleTheme);
  // The system's choice changing (no choice of the page's own): follow it.
  window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => applyTheme(true));
  if (narrow()) { setDrawer("sidebar", false); setDrawer("panel", false); }
  // The message box's hint: whole where it fits in two lines, short on a
  // phone (the whole hint stays its tooltip).
  const phone = window.matchMedia("(max-width: 600px)");
  const hint = () => { $("input").placeholder = phone.matches ? "Message the agent" : $("input").title; };
  $("input").title = $("input").placeholder;
  hint();
  phone.addEventListener("change", hint);
  $("composer").addEventListener("submit", send);
  $("input").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); $("composer").requestSubmit(); }
  });
  // Images: picked, pasted into the message box, or dropped on it.
  $("attach-input").addEventListener("change", (e) => { attachFiles([...e.target.files]); e.target.value = ""; });
  $("input").addEventListener("paste", (e) => {
    const files = [...((e.clipboardData && e.clipboardData.files) || [])];
    if (!files.length) return;
    e.preventDefault();
    attachFiles(files);
  });
  $("composer").addEventListener("dragover", (e) => {
    if (e.dataTransfer && [...e.dataTransfer.types].includes("Files")) e.preventDefault();
  });
  $("composer").addEventListener("drop", (e) => {
    if (!e.dataTransfer || !e.dataTransfer.files.length) return;
    e.preventDefault();
    attachFiles([...e.dataTransfer.files]);
  });
  $("new-session").addEventListener("click", () => { newSession(); if (narrow()) setDrawer("sidebar", false); });
  $("stop").addEventListener("click", stopRun);
  $("mode").addEventListener("change", setMode);
  $("rename").addEventListener("click", startRename);
  $("rename-form").addEventListener("submit", rename);
  $("rename-cancel").addEventListener("click", endRename);
  $("rename-input").addEventListener("keydown", (e) => { if (e.key === "Escape") endRename(); });
  $("delete").addEventListener("click", deleteSession);
  $("more-sessions").addEventListener("click", () => loadSessions(true));
  let searching = 0;
  $("search").addEventListener("input", () => { clearTimeout(searching); searching = setTimeout(() => loadSessions(), 250); });
  $("toggle-sessions").addEventListener("click", () => setDrawer("sidebar", !drawerOpen("sidebar")));
  $("toggle-panel").addEventListener("click", () => setDrawer("panel", !drawerOpen("panel")));
  $("open-graph").addEventListener("click", openGraph);
  $("graph-earlier").addEventListener("click", graphEarlier);
  $("graph-close").addEventListener("click", closeGraph);
  $("graph-view").addEventListener("keydown", (e) => { if (e.key === "Escape") closeGraph(); });
  $("zoom-in").addEventListener("click", () => zoom(1.25));
  $("zoom-out").addEventListener("click", () => zoom(0.8));
  $("zoom-reset").addEventListener("click", fit);
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && narrow()) { setDrawer("sidebar", false); setDrawer("panel", false); }
  });
  window.addEventListener("popstate", () => {
    const id = new URLSearchParams(location.search).get("session");
    if (id && id !== state.session) openSession(id, false);
  });
  setInterval(watch, 5000);
  document.addEventListener("visibilitychange", watch);
  const open = params.get("session");
  loadSessions();
  if (open) openSession(open, false);
})();
