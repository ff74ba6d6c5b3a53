// queue.js - double payments waiting for a refund, oldest first, settled
// by hand with the refund's reference (a key holding "refunds"); and,
// where the service keeps refund records (GET /ops/refund-requests), the
// refunds themselves, oldest first: approved, rejected or retried from here.
import { api, seg, query } from './api.js';
import { el, clear, table, answer } from './dom.js';
import { section, action, resultArea, when, link } from './ui.js';

const OPEN = ['AWAITING_APPROVAL', 'REQUESTED', 'SUBMITTED', 'UNKNOWN', 'FAILED'];

export function show(main) {
  const area = resultArea();
  const list = el('div');
  const refunds = el('div');
  const done = el('div');
  main.append(el('h1', {}, 'Double payments and refunds'), area,
    section('Waiting: the customer was charged twice', list),
    section('Refunds not succeeded yet', refunds),
    section('Settled recently', done));
  async function load() {
    const [w, s, r] = await Promise.all([
      api('GET', `/ops/refunds${query({ status: 'REFUND_REQUIRED', limit: 100 })}`),
      api('GET', `/ops/refunds${query({ status: 'REFUND_SETTLED', limit: 20 })}`),
      api('GET', `/ops/refund-requests${query({ limit: 100 })}`)]);
    clear(list).append(w.ok ? table([
      ['Charged', p => when(p.created_at)], ['pay_no', p => p.pay_no],
      ['Order', p => link('order', p.order_no, p.order_no)], ['Amount', p => p.amount],
      ['', p => action('refunds', 'Settle…', {
        title: `Settle the refund of ${p.pay_no}?`,
        text: `Record that ${p.amount} paid by ${p.pay_no} (order ${p.order_no}) was refunded. POST /ops/refunds/${p.pay_no}/settle`,
        input: 'Refund reference', okLabel: 'Settle',
      }, ref => api('POST', `/ops/refunds/${seg(p.pay_no)}/settle`, { reference: ref }), area, load)],
    ], oldestFirst(w.body.payments), 'No double payment is waiting.') : answer(w));
    clear(refunds).append(refundTable(r, area, load));
    clear(done).append(s.ok ? table([
      ['Settled', p => when(p.settled_at)], ['pay_no', p => p.pay_no], ['Order', p => link('order', p.order_no, p.order_no)],
      ['Amount', p => p.amount], ['Reference', p => p.reference || ''], ['By', p => p.settled_by || ''],
    ], s.body.payments, 'None settled.') : answer(s));
  }
  load();
  return null;
}

// The refund records, when the service has them: a route it does not
// serve answers 404 NOT_FOUND.
function refundTable(r, area, load) {
  if (r.status === 404 && r.body && r.body.code === 'NOT_FOUND')
    return el('p', { class: 'hint' }, 'This service keeps no refund records: refunds are settled by hand above.');
  if (!r.ok) return answer(r);
  const open = oldestFirst(r.body.refunds.filter(x => OPEN.includes(x.state)));
  return table([
    ['Requested', x => when(x.created_at)], ['Refund', x => x.refund_no], ['pay_no', x => x.pay_no],
    ['Order', x => link('order', x.order_no, x.order_no)], ['Amount', x => `${x.amount} ${x.currency || ''}`],
    ['Gateway', x => x.gateway], ['State', x => el('span', { class: `status s-${x.state}` }, x.state)],
    ['Why', x => x.failure_code || x.last_error || x.origin || ''],
    ['', x => x.state === 'AWAITING_APPROVAL'
      ? el('span', { class: 'actions' }, action('refunds', 'Approve', {
        title: `Approve refund ${x.refund_no}?`,
        text: `${x.amount} of ${x.pay_no} (order ${x.order_no}) is sent to ${x.gateway} for refund. POST /ops/refund-requests/${x.refund_no}/approve`,
        okLabel: 'Approve',
      }, () => api('POST', `/ops/refund-requests/${seg(x.refund_no)}/approve`), area, load),
      action('refunds', 'Reject', {
        title: `Reject refund ${x.refund_no}?`,
        text: `Nothing is sent to ${x.gateway}: the refund ends FAILED (rejected) and its ${x.amount} is free again, for instance to settle a refund made at the gateway's console. POST /ops/refund-requests/${x.refund_no}/reject`,
        okLabel: 'Reject',
      }, () => api('POST', `/ops/refund-requests/${seg(x.refund_no)}/reject`), area, load))
      : ['REQUESTED', 'SUBMITTED', 'UNKNOWN'].includes(x.state)
        ? action('refunds', 'Retry', {
          title: `Submit or query refund ${x.refund_no} again now?`,
          text: `The same refund number goes to ${x.gateway} again: the gateway treats it as the same refund. POST /ops/refund-requests/${x.refund_no}/retry`,
          okLabel: 'Retry',
        }, () => api('POST', `/ops/refund-requests/${seg(x.refund_no)}/retry`), area, load)
        : ''],
  ], open, 'Every refund succeeded.');
}

function oldestFirst(items) {
  return [...items].sort((a, b) => String(a.created_at).localeCompare(String(b.created_at)));
}
