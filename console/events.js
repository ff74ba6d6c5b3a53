// events.js - outbox events by state, filtered by type, order and time
// (those in the page: at most LIMIT, the API's bound for one list), with
// a dead one sent again one by one or all that match.
import { api, seg, query, session } from './api.js';
import { el, clear, table, answer, button } from './dom.js';
import { section, action, resultArea, when, link } from './ui.js';
import { confirmAction } from './app.js';

const LIMIT = 100; // GET /ops/outbox answers at most 100 events a page
const TYPES = ['', 'order.paid', 'order.shipped', 'order.finished', 'order.canceled'];

export function show(main, arg) {
  const state = el('select', { id: 'ev-state' }, ['DEAD', 'PENDING', 'DELIVERED'].map(s => el('option', { value: s }, s)));
  const type = el('select', { id: 'ev-type' }, TYPES.map(t => el('option', { value: t }, t || 'any type')));
  const order = el('input', { id: 'ev-order', placeholder: 'order_no', value: arg || '', spellcheck: 'false' });
  const from = el('input', { id: 'ev-from', type: 'datetime-local', title: 'created at or after (UTC)' });
  const to = el('input', { id: 'ev-to', type: 'datetime-local', title: 'created before (UTC)' });
  const endpoint = el('select', { id: 'ev-endpoint', disabled: true, title: 'one endpoint: webhook.url' }, el('option', {}, 'webhook.url'));
  const area = resultArea();
  const list = el('div');
  const filters = el('form', { class: 'filters' },
    label('State', state), label('Type', type), label('Order', order), label('Endpoint', endpoint),
    label('From (UTC)', from), label('To (UTC)', to), el('button', { type: 'submit' }, 'Filter'));
  main.append(el('h1', {}, 'Events'), filters, area, list);
  let events = [];

  const matches = e => (!type.value || e.type === type.value) &&
    (!order.value.trim() || e.order_no === order.value.trim()) &&
    (!from.value || String(e.created_at) >= from.value.replace('T', ' ')) &&
    (!to.value || String(e.created_at) < to.value.replace('T', ' '));

  async function load() {
    const res = await api('GET', `/ops/outbox${query({ state: state.value, limit: LIMIT })}`);
    clear(list);
    if (!res.ok) { list.append(answer(res)); return; }
    events = res.body.events.filter(matches);
    const dead = events.filter(e => e.state === 'DEAD');
    const all = dead.length && session.can('events') ? button(`Send again all ${dead.length} matching`, () => sendAll(dead), 'action') : null;
    list.append(section(`${events.length} event${events.length === 1 ? '' : 's'}${res.body.next_after !== undefined ? ` (first ${LIMIT} of this state)` : ''}`,
      el('div', { class: 'actions' }, all),
      table([
        ['id', e => String(e.id)], ['Type', e => e.type], ['Order', e => link('order', e.order_no, e.order_no)],
        ['State', e => el('span', { class: `status s-${e.state}` }, e.state)], ['Attempts', e => String(e.attempts)],
        ['Created', e => when(e.created_at)], ['Last error', e => e.last_error || ''],
        ['', e => e.state === 'DEAD' ? action('events', 'Send again', {
          title: `Send event ${e.id} again?`,
          text: `${e.type} of order ${e.order_no} goes back to PENDING and is delivered again. POST /ops/outbox/${e.id}/retry`,
        }, () => api('POST', `/ops/outbox/${seg(e.id)}/retry`), area, load) : ''],
      ], events, 'No event matches.')));
  }

  async function sendAll(dead) {
    const c = await confirmAction({ title: `Send ${dead.length} dead events again?`, text: `Each goes back to PENDING: ${dead.length} calls of POST /ops/outbox/{id}/retry, one after another.` });
    if (!c.ok) return;
    const answers = [];
    for (const e of dead) {
      const r = await api('POST', `/ops/outbox/${seg(e.id)}/retry`);
      answers.push(`${e.id}: ${r.status} ${r.body ? (r.body.state || r.body.code || '') : r.text}`);
    }
    clear(area).append(el('pre', { class: 'answer ok' }, answers.join('\n')));
    load();
  }

  filters.addEventListener('submit', e => { e.preventDefault(); load(); });
  load();
  return null;
}

function label(text, input) {
  return el('label', {}, el('span', {}, text), input);
}
