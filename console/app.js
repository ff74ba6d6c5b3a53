// app.js - sign-in, navigation and the confirmation every change asks
// for. Views live in their own modules, loaded when first shown.
import { api, session } from './api.js';
import { el, clear } from './dom.js';

const $ = id => document.getElementById(id);
const views = {
  overview: () => import('./overview.js'),
  order: () => import('./order.js'),
  queue: () => import('./queue.js'),
  events: () => import('./events.js'),
  stale: () => import('./stale.js'),
  audit: () => import('./audit.js'),
};
let current = null; // the view shown: {stop()} or null

// Asks before a change: resolves {ok, value} (value: the input's text).
export function confirmAction({ title, text, input, okLabel }) {
  const d = $('confirm');
  $('confirm-title').textContent = title;
  $('confirm-text').textContent = text;
  $('confirm-ok').textContent = okLabel || 'Confirm';
  $('confirm-input-label').hidden = !input;
  $('confirm-input-name').textContent = input || '';
  $('confirm-input').value = '';
  return new Promise(resolve => {
    d.addEventListener('close', () => resolve({ ok: d.returnValue === 'ok', value: $('confirm-input').value.trim() }), { once: true });
    d.returnValue = '';
    d.showModal();
    (input ? $('confirm-input') : $('confirm-ok')).focus();
  });
}

function signedOut(message) {
  session.clear();
  session.who = null;
  if (current && current.stop) current.stop();
  current = null;
  clear($('main')).hidden = true;
  $('nav').hidden = true;
  $('who').hidden = true;
  $('who-name').textContent = '';
  $('signin').hidden = false;
  $('key').value = '';
  const err = $('signin-error');
  err.textContent = message || '';
  err.hidden = !message;
  $('key').focus();
}

async function signIn(key) {
  session.set(key);
  const res = await api('GET', '/ops/whoami');
  if (res.status === 401) return signedOut('This key is not valid: the service refused it.');
  if (!res.ok || !res.body) return signedOut(`The service did not answer (${res.status}); try again.`);
  session.who = { name: String(res.body.name), scopes: (res.body.scopes || []).map(String) };
  $('signin').hidden = true;
  $('signin-error').hidden = true;
  $('who-name').textContent = `Signed in as ${session.who.name}`;
  $('who').hidden = false;
  for (const a of $('nav').querySelectorAll('[data-scope]')) a.hidden = !session.can(a.dataset.scope);
  $('nav').hidden = false;
  $('main').hidden = false;
  route();
}

async function route() {
  if (!session.who) return;
  const [name, arg] = location.hash.replace(/^#\/?/, '').split('/');
  const view = views[name] ? name : 'overview';
  for (const a of $('nav').querySelectorAll('a')) a.classList.toggle('active', a.dataset.view === view);
  if (current && current.stop) current.stop();
  const main = clear($('main'));
  if (!session.can('read')) {
    main.append(el('p', { class: 'error' }, 'This key may not read orders or events (it lacks the scope read).'));
    current = null;
    return;
  }
  const mod = await views[view]();
  current = mod.show(main, arg ? decodeURIComponent(arg) : '') || null;
}

session.onUnauthorized = () => signedOut('The key was refused by the service; sign in again.');
$('signin-form').addEventListener('submit', e => {
  e.preventDefault();
  const k = $('key').value.trim();
  $('key').value = '';
  if (k) signIn(k);
});
$('signout').addEventListener('click', () => signedOut(''));
window.addEventListener('hashchange', route);
if (session.key()) signIn(session.key()); else signedOut('');
