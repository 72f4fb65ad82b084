// The playground page: it loads cpvalidate's checks (playground.wasm,
// built from ./wasm) and runs them as the policy is edited.
'use strict';

const $ = (id) => document.getElementById(id);
const src = $('src');
const backdrop = $('backdrop');
const gutter = $('gutter');
let last = null; // the last check result
let renderSeq = 0;

function escapeHTML(s) {
  return s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));
}

function format() {
  return $('format').value;
}

// Lines with a diagnostic get its severity and, after the line's text, the
// first message on it: the diagnostics inline.
function paintLines(diagnostics) {
  const lines = src.value.split('\n');
  const byLine = new Map();
  const rank = { error: 0, warning: 1, info: 2 };
  for (const d of diagnostics) {
    const prev = byLine.get(d.line);
    if (!prev || rank[d.severity] < rank[prev.severity]) byLine.set(d.line, d);
  }
  let back = '';
  let gut = '';
  lines.forEach((text, i) => {
    const d = byLine.get(i + 1);
    const cls = d ? ` class="${d.severity}"` : '';
    const note = d ? `<span class="note">${escapeHTML(d.code ? d.code + ' ' : '')}${escapeHTML(d.message.split('\n')[0])}</span>` : '';
    back += `<div${cls} data-line="${i + 1}">${escapeHTML(text)}${note}</div>`;
    gut += `<div${cls} data-line="${i + 1}">${i + 1}</div>`;
  });
  backdrop.innerHTML = back;
  gutter.innerHTML = gut;
  syncScroll();
}

function syncScroll() {
  backdrop.scrollTop = src.scrollTop;
  backdrop.scrollLeft = src.scrollLeft;
  gutter.scrollTop = src.scrollTop;
}

// goTo puts the cursor at a line and column of the policy.
function goTo(line, col) {
  const lines = src.value.split('\n');
  let off = 0;
  for (let i = 0; i < line - 1 && i < lines.length; i++) off += lines[i].length + 1;
  off += Math.max(0, col - 1);
  src.focus();
  src.setSelectionRange(off, off);
  const lineHeight = src.scrollHeight / Math.max(1, lines.length);
  src.scrollTop = Math.max(0, (line - 5) * lineHeight);
  syncScroll();
}

function listDiagnostics(list, diagnostics, empty) {
  list.innerHTML = '';
  if (diagnostics.length === 0) {
    const li = document.createElement('li');
    li.className = 'clean';
    li.textContent = empty;
    list.appendChild(li);
    return;
  }
  for (const d of diagnostics) {
    const li = document.createElement('li');
    li.className = d.severity;
    li.dataset.line = d.line;
    let html = `${d.line}:${d.col}: ${d.severity}: ${escapeHTML(d.message)}` + (d.code ? ` <span class="code-tag">[${d.code}]</span>` : '');
    for (const r of d.related || []) {
      html += `\n  <span class="related">${r.file ? escapeHTML(r.file) + ':' : ''}${r.line}:${r.col}: ${escapeHTML(r.message)}</span>`;
    }
    if (d.trace && d.trace.length) {
      html += '\n  <span class="related">witness:</span>';
      d.trace.forEach((step, i) => { html += `\n  <span class="related">  ${i + 1}. ${escapeHTML(step)}</span>`; });
    }
    li.innerHTML = html;
    li.addEventListener('click', () => goTo(d.line, d.col));
    list.appendChild(li);
  }
}

function setStatus(res) {
  const st = $('status');
  if (res.errors > 0) {
    st.className = 'status errors';
    st.textContent = `${res.errors} error${res.errors === 1 ? '' : 's'}` + (res.warnings ? `, ${res.warnings} warning${res.warnings === 1 ? '' : 's'}` : '');
  } else {
    st.className = 'status clean';
    const p = res.policy;
    st.textContent = `ok: ${p.name} v${p.version}, ${p.states} states` + (res.warnings ? `, ${res.warnings} warning${res.warnings === 1 ? '' : 's'}` : '');
  }
}

function updateRoles(res) {
  const sel = $('role');
  const roles = res.policy ? res.policy.roles : [];
  const have = Array.from(sel.options).slice(1).map((o) => o.value);
  if (have.join('\n') === roles.join('\n')) return;
  const keep = sel.value;
  sel.length = 1;
  for (const r of roles) sel.add(new Option(r, r));
  sel.value = roles.includes(keep) ? keep : '';
}

async function drawDiagram() {
  const box = $('diagram');
  const seq = ++renderSeq;
  let text = '';
  let why = '';
  if (!last || last.errors > 0) {
    why = 'Fix the errors to see the diagram.';
  } else if ($('role').value === '') {
    text = last.mermaid;
  } else {
    const res = JSON.parse(parley.project(format(), src.value, $('role').value));
    if (res.error) {
      why = res.error + (res.diagnostics.length ? ':\n' + res.diagnostics.map((d) => `${d.line}:${d.col}: ${d.message} [${d.code}]`).join('\n') : '');
    }
    text = res.mermaid;
  }
  if (why && last && last.errors > 0 && box.querySelector('svg')) {
    // Keep the last drawing, marked as out of date, while the errors
    // are being fixed.
    if (box.dataset.state !== 'stale') {
      box.insertAdjacentHTML('afterbegin', '<p class="placeholder stale-note">Fix the errors to update the diagram: this is the last version without errors.</p>');
    }
    box.dataset.state = 'stale';
    return;
  }
  $('mermaid-text').textContent = text;
  box.dataset.state = why ? 'none' : 'pending';
  if (why) {
    box.innerHTML = `<p class="placeholder">${escapeHTML(why)}</p>`;
    return;
  }
  if (typeof mermaid === 'undefined') {
    box.innerHTML = '<p class="placeholder">mermaid.min.js is not installed (see docs/playground.md); the diagram as Mermaid text:</p>';
    const pre = document.createElement('pre');
    pre.textContent = text;
    box.appendChild(pre);
    box.dataset.state = 'text';
    return;
  }
  try {
    const { svg } = await mermaid.render(`diagram-${seq}`, text);
    if (seq !== renderSeq) return; // a newer drawing is on its way
    box.innerHTML = svg;
    box.dataset.state = 'drawn';
    fit();
  } catch (e) {
    if (seq !== renderSeq) return;
    box.innerHTML = `<p class="placeholder">mermaid could not draw it: ${escapeHTML(String(e.message || e))}</p>`;
    box.dataset.state = 'failed';
  }
}

// fit draws the diagram to the width of its box, or at its own size
// (mermaid gives it a width of 100% up to its own width).
function fit() {
  const svg = $('diagram').querySelector('svg');
  if (!svg) return;
  if (!svg.dataset.width) svg.dataset.width = svg.style.maxWidth;
  if ($('fit').checked) {
    svg.setAttribute('width', '100%');
    svg.style.maxWidth = svg.dataset.width;
  } else {
    svg.setAttribute('width', parseFloat(svg.dataset.width));
    svg.style.maxWidth = 'none';
  }
}

function check() {
  const res = JSON.parse(parley.check(format(), src.value));
  last = res;
  paintLines(res.diagnostics);
  listDiagnostics($('diagnostics'), res.diagnostics, 'No problems: cpvalidate accepts this policy.');
  setStatus(res);
  updateRoles(res);
  drawDiagram();
}

let timer = 0;
function scheduleCheck() {
  if (src.value.trimStart().startsWith('<') !== (format() === 'xml')) {
    $('format').value = src.value.trimStart().startsWith('<') ? 'xml' : 'yaml';
  }
  paintLines(last ? last.diagnostics : []);
  clearTimeout(timer);
  timer = setTimeout(check, 150);
}

function checkTrace() {
  const res = JSON.parse(parley.trace(format(), src.value, $('trace').value, $('bind').value));
  const list = $('findings');
  const sum = $('trace-summary');
  if (res.error) {
    list.innerHTML = '';
    sum.textContent = res.error;
    return;
  }
  listDiagnostics(list, res.findings.map((f) => ({
    severity: f.severity, code: f.code, line: f.line, col: 1,
    message: (f.agent ? f.agent + (f.role ? ` (${f.role})` : '') + ': ' : '') + f.message,
  })), 'No findings.');
  for (const li of list.querySelectorAll('li')) {
    li.textContent = li.textContent.replace(/^(\d+):1: /, 'line $1: ');
    li.onclick = null;
  }
  const outcomes = Object.entries(res.summary.outcomes || {}).sort().map(([a, o]) => `${a}: ${o || 'unfinished'}`);
  sum.textContent = `${res.summary.conforms ? 'conforms' : 'does not conform'}, ${res.summary.complete ? 'complete' : 'incomplete'}` +
    (outcomes.length ? ` (${outcomes.join('; ')})` : '');
}

const sampleTrace = {
  'fipa-request': [
    '{"at": "2025-01-01T10:00:00Z", "performative": "request", "sender": "alice", "receiver": "bob", "conversation_id": "c1", "content": {"action": "ship"}}',
    '{"at": "1s", "performative": "agree", "sender": "bob", "receiver": "alice", "conversation_id": "c1"}',
    '{"at": "2s", "performative": "inform", "sender": "bob", "receiver": "alice", "conversation_id": "c1", "content": {"done": true}}',
  ].join('\n'),
};

function loadExample(name) {
  const ex = examples.find((e) => e.name === name);
  if (!ex) return;
  src.value = format() === 'xml' ? ex.xml : ex.yaml;
  $('trace').value = sampleTrace[name] || '';
  check();
}

let examples = [];
function start() {
  examples = JSON.parse(parley.examples());
  const sel = $('example');
  for (const e of examples) sel.add(new Option(e.name, e.name));
  sel.addEventListener('change', () => loadExample(sel.value));
  $('format').addEventListener('change', () => { if (sel.value) loadExample(sel.value); else check(); });
  src.addEventListener('input', () => { sel.value = ''; scheduleCheck(); });
  src.addEventListener('scroll', syncScroll);
  $('role').addEventListener('change', drawDiagram);
  $('fit').addEventListener('change', fit);
  $('check-trace').addEventListener('click', checkTrace);
  sel.value = 'fipa-request';
  loadExample('fipa-request');
  document.body.dataset.ready = 'true';
}

if (typeof mermaid !== 'undefined') {
  mermaid.initialize({ startOnLoad: false, theme: 'neutral', securityLevel: 'strict' });
}

window.parleyReady = start;
const go = new Go();
WebAssembly.instantiateStreaming(fetch('playground.wasm'), go.importObject)
  .then((r) => go.run(r.instance))
  .catch((e) => { $('status').textContent = 'could not load the checker: ' + e; });
