// dom.js - building the page without ever parsing data as markup: every
// value from the API becomes a text node (textContent), never innerHTML.

// el('td', {class: 'num'}, 'text', childNode, ...): an element with
// attributes (strings; on* handlers are refused) and children (strings
// become text nodes, null/false are skipped).
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) throw new Error('no inline handlers');
    e.setAttribute(k, v === true ? '' : String(v));
  }
  append(e, children);
  return e;
}

export function append(e, children) {
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

export function clear(e) {
  while (e.firstChild) e.firstChild.remove();
  return e;
}

// A button that runs fn on click.
export function button(label, fn, cls) {
  const b = el('button', { type: 'button', class: cls });
  b.textContent = label;
  b.addEventListener('click', fn);
  return b;
}

// A table of rows: cols is [[heading, row => cell]], a cell being a
// string or a node.
export function table(cols, rows, empty) {
  if (!rows.length) return el('p', { class: 'empty' }, empty || 'Nothing here.');
  return el('table', {},
    el('thead', {}, el('tr', {}, cols.map(([h]) => el('th', {}, h)))),
    el('tbody', {}, rows.map(r => el('tr', {}, cols.map(([, f]) => el('td', {}, f(r)))))));
}

// The answer of the API as text: status and JSON body.
export function answer(res) {
  return el('pre', { class: res.ok ? 'answer ok' : 'answer fail' },
    `${res.status} ${res.ok ? 'OK' : ''}\n${res.body === null ? res.text : JSON.stringify(res.body, null, 2)}`);
}

const SVG = 'http://www.w3.org/2000/svg';
export function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}
