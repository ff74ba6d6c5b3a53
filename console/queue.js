// queue.js - double payments waiting for a refund, oldest first, each
// settled (with the refund's reference) by a key holding "refunds".
import { api, seg, query } from './api.js';
import { el, clear, table, answer } from './dom.js';
import { section, action, resultArea, when, link } from './ui.js';

export function show(main) {
  const area = resultArea();
  const list = el('div');
  const done = el('div');
  main.append(el('h1', {}, 'Double payments and refunds'), area,
    section('Waiting: the customer was charged twice', list), section('Settled recently', done));
  async function load() {
    const [w, s] = await Promise.all([
      api('GET', `/ops/refunds${query({ status: 'REFUND_REQUIRED', limit: 100 })}`),
      api('GET', `/ops/refunds${query({ status: 'REFUND_SETTLED', limit: 20 })}`)]);
    clear(list).append(w.ok ? table([
      ['Charged', p => when(p.created_at)], ['pay_no', p => p.pay_no],
      ['Order', p => link('order', p.order_no, p.order_no)], ['Amount', p => p.amount],
      ['', p => action('refunds', 'Settle…', {
        title: `Settle the refund of ${p.pay_no}?`,
        text: `Record that ${p.amount} paid by ${p.pay_no} (order ${p.order_no}) was refunded. POST /ops/refunds/${p.pay_no}/settle`,
        input: 'Refund reference', okLabel: 'Settle',
      }, ref => api('POST', `/ops/refunds/${seg(p.pay_no)}/settle`, { reference: ref }), area, load)],
    ], oldestFirst(w.body.payments), 'No double payment is waiting.') : answer(w));
    clear(done).append(s.ok ? table([
      ['Settled', p => when(p.settled_at)], ['pay_no', p => p.pay_no], ['Order', p => link('order', p.order_no, p.order_no)],
      ['Amount', p => p.amount], ['Reference', p => p.reference || ''], ['By', p => p.settled_by || ''],
    ], s.body.payments, 'None settled.') : answer(s));
  }
  load();
  return null;
}

function oldestFirst(items) {
  return [...items].sort((a, b) => String(a.created_at).localeCompare(String(b.created_at)));
}
