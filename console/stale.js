// stale.js - WAIT_PAY orders whose callback never came (older than
// reconcile.wait_pay_age_s), and asking the gateways about them now.
import { api } from './api.js';
import { el, clear, table, answer } from './dom.js';
import { section, action, resultArea, when, link } from './ui.js';

export function show(main) {
  const area = resultArea();
  const list = el('div');
  main.append(el('h1', {}, 'Stale orders'), list, area);
  async function load() {
    const res = await api('GET', '/ops/reconcile');
    clear(list);
    if (!res.ok) { list.append(answer(res)); return; }
    const s = res.body.wait_pay_stale;
    list.append(section(`${s.count} order${s.count === 1 ? '' : 's'} waiting for payment longer than ${s.older_than_s} s`,
      el('div', { class: 'actions' }, action('orders', 'Ask the gateway', {
        title: 'Ask the gateways about stale orders now?',
        text: 'Every configured query endpoint is asked about the oldest stale orders; each PAID answer is applied as its callback would be. POST /ops/reconcile/query',
      }, () => api('POST', '/ops/reconcile/query', {}), area, load)),
      table([
        ['Order', o => link('order', o.order_no, o.order_no)], ['User', o => o.user_id],
        ['Amount', o => o.amount], ['Created', o => when(o.created_at)],
      ], s.orders || [], 'No stale order.')));
  }
  load();
  return null;
}
