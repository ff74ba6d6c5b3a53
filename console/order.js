// order.js - one order found by order_no (or pay_no): its details, a
// history built from its timestamps, payments and audit rows, its refunds,
// its events with their delivery per endpoint, and the transitions its
// status allows, as buttons.
import { api, seg, query, session } from './api.js';
import { el, clear, table, answer } from './dom.js';
import { section, action, resultArea, when, link } from './ui.js';
import { deliveries } from './events.js';

// The state machine: WAIT_PAY=1 → PAID, CANCELED; PAID → SHIPPED, CANCELED; SHIPPED → FINISHED.
const NEXT = { WAIT_PAY: ['cancel'], PAID: ['ship', 'cancel'], SHIPPED: ['finish'] };
const VERB = { ship: 'Ship', finish: 'Finish', cancel: 'Cancel' };

export function show(main, arg) {
  const input = el('input', { id: 'order-q', placeholder: 'order_no or pay_no', spellcheck: 'false', value: arg || '' });
  const form = el('form', { class: 'search' }, input, el('button', { type: 'submit' }, 'Find'));
  const out = el('div');
  const area = resultArea(); // outside out: the answer stays when the order is read again
  form.addEventListener('submit', e => {
    e.preventDefault();
    const q = input.value.trim();
    if (q) location.hash = `#/order/${encodeURIComponent(q)}`;
  });
  main.append(el('h1', {}, 'Order'), form, area, out);
  if (arg) load(arg, out, area);
  return null;
}

async function find(q) {
  let res = await api('GET', `/order/${seg(q)}`);
  if (res.status === 404) {
    const pay = await api('GET', `/ops/payments/${seg(q)}`);
    if (pay.ok && pay.body && pay.body.order_no) res = await api('GET', `/order/${seg(pay.body.order_no)}`);
  }
  return res;
}

async function load(q, out, area) {
  clear(out).append(el('p', { class: 'hint' }, 'Loading…'));
  const res = await find(q);
  clear(out);
  if (!res.ok) {
    out.append(el('p', { class: 'error' }, res.status === 404 ? `No order or payment called “${q}”.` : 'The service refused the search:'), answer(res));
    return;
  }
  const o = res.body;
  // Audit rows name the order, or one of its payments (a settle).
  const subjects = [o.order_no, ...(o.payments || []).map(p => p.pay_no)];
  const [audits, events, refunds] = await Promise.all([
    session.can('audit') ? Promise.all(subjects.map(x => api('GET', `/ops/audit${query({ subject: x, limit: 100 })}`))) : null,
    api('GET', `/ops/outbox${query({ order_no: o.order_no, limit: 100 })}`),
    Promise.all((o.payments || []).map(p => api('GET', `/ops/refund-requests${query({ pay_no: p.pay_no, limit: 100 })}`)))]);
  // and the audit rows of its refunds (an approval, a retry)
  const refundNos = refunds.filter(r => r.ok).flatMap(r => r.body.refunds.map(x => x.refund_no));
  if (audits && refundNos.length) audits.push(...await Promise.all(refundNos.map(x => api('GET', `/ops/audit${query({ subject: x, limit: 100 })}`))));
  const failedAudit = audits && audits.find(r => !r.ok);
  const audit = audits === null ? null : failedAudit || { ok: true, body: { entries: audits.flatMap(r => r.body.entries).sort((a, b) => String(a.created_at).localeCompare(String(b.created_at))) } };
  // A service without refund records answers 404 NOT_FOUND on the route.
  const noRecords = refunds.some(r => r.status === 404 && r.body && r.body.code === 'NOT_FOUND');
  const failedRefunds = refunds.find(r => !r.ok);
  const refundRows = noRecords || failedRefunds ? [] : refunds.flatMap(r => r.body.refunds);
  const reload = () => load(o.order_no, out, area);
  const buttons = (NEXT[o.status] || []).map(t => action('orders', VERB[t],
    { title: `${VERB[t]} order ${o.order_no}?`, text: `POST /order/${o.order_no}/${t}: ${o.status} → ${t === 'cancel' ? 'CANCELED' : t === 'ship' ? 'SHIPPED' : 'FINISHED'}.${t === 'cancel' && o.status === 'PAID' ? ' Its payment will need a refund.' : ''}` },
    () => api('POST', `/order/${seg(o.order_no)}/${t}`), area, reload));
  out.append(
    section(`Order ${o.order_no}`,
      el('dl', { class: 'facts' },
        fact('Status', el('span', { class: `status s-${o.status}` }, o.status)), fact('Amount', o.amount),
        fact('User', o.user_id), fact('SKU', `${o.sku} × ${o.quantity}`), fact('Checkout', o.request_id),
        fact('Created', when(o.create_time)), fact('Updated', when(o.update_time))),
      el('div', { class: 'actions' }, buttons.filter(Boolean).length ? buttons : el('span', { class: 'hint' }, NEXT[o.status] ? 'This key may not change orders.' : 'Final status: no transition.'))),
    section('History', history(o, audit && audit.ok ? audit.body.entries : [], refundRows)),
    section('Payments', table([
      ['pay_no', p => p.pay_no], ['Amount', p => p.amount], ['Status', p => el('span', { class: `status s-${p.status}` }, p.status)],
      ['Recorded', p => when(p.create_time)],
      ['', p => p.status === 'REFUND_REQUIRED' ? link('queue', '', 'in the queue') : ''],
    ], o.payments || [], 'No payment recorded.')),
    section('Audit rows', audit === null ? el('p', { class: 'hint' }, 'This key may not read the audit log.')
      : audit.ok ? table([['When', a => when(a.created_at)], ['Who', a => a.actor], ['Action', a => a.action], ['Subject', a => a.subject], ['Detail', a => a.detail]], audit.body.entries, 'No operator changed this order or its payments.')
      : answer(audit)),
    section('Refunds', noRecords ? el('p', { class: 'hint' }, 'This service keeps no refund records: a double payment is settled by hand in the queue.')
      : failedRefunds ? answer(failedRefunds)
        : table([
          ['Requested', x => when(x.created_at)], ['Refund', x => x.refund_no], ['pay_no', x => x.pay_no],
          ['Amount', x => `${x.amount} ${x.currency || ''}`], ['Gateway', x => x.gateway || ''],
          ['State', x => el('span', { class: `status s-${x.state}` }, x.state)], ['Why', x => x.failure_code || x.last_error || x.origin || ''],
        ], refundRows, 'No refund of its payments.'),
      link('queue', '', 'The refund queue')),
    section('Events', events.ok ? table([
      ['id', e => String(e.id)], ['Type', e => e.type], ['State', e => el('span', { class: `status s-${e.state}` }, e.state)],
      ['Created', e => when(e.created_at)], ['Per endpoint', e => deliveries(e)], ['Last error', e => e.last_error || ''],
    ], events.body.events, 'No event of this order.') : answer(events), link('events', o.order_no, 'Send again or replay')));
}

function fact(k, v) {
  return [el('dt', {}, k), el('dd', {}, v)];
}

function history(o, audit, refunds) {
  const rows = [{ t: o.create_time, what: 'created (WAIT_PAY)', who: o.user_id }];
  for (const x of refunds) rows.push({ t: x.created_at, what: `refund ${x.refund_no} of ${x.pay_no} ${x.amount}: asked (${x.origin || 'refund'}), ${x.state} now`, who: x.requested_by || 'service' });
  for (const p of o.payments || []) rows.push({ t: p.create_time, what: `payment ${p.pay_no} ${p.amount}: ${p.status === 'PAID' ? 'paid' : 'charged again, REFUND_REQUIRED'}`, who: 'gateway' });
  for (const a of audit) rows.push({ t: a.created_at, what: `${a.action} ${a.detail}`, who: a.actor });
  rows.sort((a, b) => String(a.t).localeCompare(String(b.t)));
  return table([['When', r => when(r.t)], ['What', r => r.what], ['By', r => r.who]], rows);
}
