// ui.js - what the views share: a titled section, the answer area, and
// an action that asks first, calls the API and shows its answer.
import { el, clear, answer, button } from './dom.js';
import { session } from './api.js';
import { confirmAction } from './app.js';

export function section(title, ...children) {
  return el('section', { class: 'panel' }, el('h2', {}, title), ...children);
}

// A result area: the last action's answer is shown here.
export function resultArea() {
  return el('div', { class: 'result', 'aria-live': 'polite' });
}

// A button for a change that needs scope; null (nothing shown) when the
// key lacks it. run() performs the call and returns the API's answer;
// input names a value to ask for (its text is passed to run).
export function action(scope, label, { title, text, input, okLabel }, run, area, after) {
  if (!session.can(scope)) return null;
  return button(label, async () => {
    const c = await confirmAction({ title, text, input, okLabel });
    if (!c.ok) return;
    if (input && !c.value) return;
    const res = await run(c.value);
    clear(area).append(answer(res));
    if (after) after(res);
  }, 'action');
}

// A time as stored ("2026-12-03 14:14:22.123"), to the second, kept on one line.
export function when(s) {
  return el('span', { class: 't' }, s ? String(s).replace('T', ' ').replace(/\.\d+Z?$|Z$/, '') : '');
}

export function link(view, arg, text) {
  return el('a', { href: `#/${view}/${encodeURIComponent(arg)}` }, text);
}
