// events.js - outbox events by state, of one order or at one endpoint
// (the API filters those), then by type and time in the page (among at
// most LIMIT, the API's bound for one list), each with its delivery per
// endpoint; a dead one sent again one by one or all that match; where the
// service has several endpoints and replays, one event or all since a
// time replayed to one endpoint or every subscribing one.
import { api, seg, query, session } from './api.js';
import { el, clear, table, answer, button } from './dom.js';
import { section, action, resultArea, when, link } from './ui.js';
import { confirmAction } from './app.js';

const LIMIT = 100; // GET /ops/outbox answers at most 100 events a page
const TYPES = ['', 'order.paid', 'order.shipped', 'order.finished', 'order.canceled',
  'payment.double_charged', 'refund.succeeded', 'refund.failed'];

export function show(main, arg) {
  const state = el('select', { id: 'ev-state' }, ['DEAD', 'PENDING', 'DELIVERED'].map(s => el('option', { value: s }, s)));
  const type = el('select', { id: 'ev-type' }, TYPES.map(t => el('option', { value: t }, t || 'any type')));
  const order = el('input', { id: 'ev-order', placeholder: 'order_no', value: arg || '', spellcheck: 'false' });
  const from = el('input', { id: 'ev-from', type: 'datetime-local', title: 'created at or after (UTC)' });
  const to = el('input', { id: 'ev-to', type: 'datetime-local', title: 'created before (UTC)' });
  const endpoint = el('input', { id: 'ev-endpoint', placeholder: 'every endpoint', spellcheck: 'false', title: 'only the events whose delivery there is in the state; and the endpoint a replay goes to (webhook.url is "default"); empty: every endpoint' });
  const since = el('input', { id: 'ev-since', type: 'datetime-local', title: 'replay every event written at or after (UTC)' });
  const replayPanel = el('div');
  const area = resultArea();
  const list = el('div');
  const filters = el('form', { class: 'filters' },
    label('State', state), label('Type', type), label('Order', order), label('Endpoint', endpoint),
    label('From (UTC)', from), label('To (UTC)', to), el('button', { type: 'submit' }, 'Filter'));
  main.append(el('h1', {}, 'Events'), filters, area, replayPanel, list);
  let events = [];
  let canReplay = false;

  // Times compare as the API writes them: 2026-12-03T15:00:00.000000Z.
  const ep = () => endpoint.value.trim();
  const atEndpoint = e => !ep() || (e.deliveries || []).some(d => d.endpoint === ep() && d.state === state.value);
  const matches = e => (!type.value || e.type === type.value) &&
    (!order.value.trim() || e.order_no === order.value.trim()) &&
    (!order.value.trim() || atEndpoint(e)) &&
    (!from.value || String(e.created_at) >= from.value) &&
    (!to.value || String(e.created_at) < to.value);

  // The API lists by the event's state, of one order (any state, filtered
  // here), or by the state of its delivery at one endpoint.
  function listQuery() {
    const o = order.value.trim();
    if (o) return { order_no: o, state: ep() ? undefined : state.value, limit: LIMIT };
    return { state: state.value, endpoint: ep() || undefined, limit: LIMIT };
  }

  async function load() {
    const res = await api('GET', `/ops/outbox${query(listQuery())}`);
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
        ['Created', e => when(e.created_at)], ['Per endpoint', e => deliveries(e)], ['Last error', e => e.last_error || ''],
        ['', e => [e.state === 'DEAD' ? action('events', 'Send again', {
          title: `Send event ${e.id} again?`,
          text: `${e.type} of order ${e.order_no} goes back to PENDING and is delivered again. POST /ops/outbox/${e.id}/retry`,
        }, () => api('POST', `/ops/outbox/${seg(e.id)}/retry`), area, load) : null,
        canReplay ? action('events', 'Replay', {
          title: `Replay event ${e.id}?`,
          text: `${e.type} of order ${e.order_no} is delivered again to ${target()}, under the same webhook-id. POST /ops/outbox/${e.id}/replay`,
        }, () => api('POST', `/ops/outbox/${seg(e.id)}/replay`, endpointBody()), area, load) : null]],
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

  const target = () => endpoint.value.trim() ? `the endpoint “${endpoint.value.trim()}”` : 'every endpoint that subscribes to its type';
  const endpointBody = () => endpoint.value.trim() ? { endpoint: endpoint.value.trim() } : {};

  // Replays exist where the service routes POST /ops/outbox/replay: its
  // Allow header says so (an OPTIONS is answered before any key is asked).
  async function probeReplay() {
    const r = await fetch('/ops/outbox/replay', { method: 'OPTIONS', cache: 'no-store', credentials: 'omit' }).catch(() => null);
    canReplay = !!r && /\bPOST\b/.test(r.headers.get('Allow') || '');
    endpoint.disabled = !canReplay;
    if (!canReplay) { endpoint.placeholder = 'webhook.url'; return; }
    const replaySince = action('events', 'Replay since…', {
      title: 'Replay every event written since the time given?',
      text: 'Events of the chosen type (or all) written at or after the time are delivered again, oldest first, to the endpoint given (or every subscribing one), at most webhook.replay_max per request (next_after in the answer says whether more remain). POST /ops/outbox/replay',
    }, async () => {
      if (!since.value) return { status: 0, ok: false, body: null, text: 'give the time to replay from (UTC)' };
      // No limit: the API's own bound (webhook.replay_max) holds; its
      // next_after says where a next request would go on.
      const body = { since: `${since.value.length === 16 ? `${since.value}:00` : since.value}Z`, ...endpointBody() };
      if (type.value) body.types = [type.value];
      return api('POST', '/ops/outbox/replay', body);
    }, area, load);
    if (replaySince) replayPanel.append(section('Replay', el('div', { class: 'filters' }, label('Since (UTC)', since), replaySince)));
  }

  filters.addEventListener('submit', e => { e.preventDefault(); load(); });
  probeReplay().then(load);
  return null;
}

// Where the event stands at each endpoint it was handed to.
export function deliveries(e) {
  const ds = e.deliveries || [];
  if (!ds.length) return el('span', { class: 'hint' }, { DELIVERED: 'no endpoint takes it', PENDING: 'not handed out yet' }[e.state] || 'no delivery recorded');
  return el('ul', { class: 'deliveries' }, ds.map(d => el('li', {},
    `${d.endpoint} `, el('span', { class: `status s-${d.state}` }, d.state),
    d.attempts ? ` ${d.attempts} attempt${d.attempts === 1 ? '' : 's'}` : '',
    d.last_error && d.state !== 'DELIVERED' ? ` · ${d.last_error}` : '')));
}

function label(text, input) {
  return el('label', {}, el('span', {}, text), input);
}
