// audit.js - who did what, when: GET /ops/audit, oldest first, filtered
// by actor, action and subject, a page at a time.
import { api, query } from './api.js';
import { el, clear, table, answer, button } from './dom.js';
import { section, when } from './ui.js';

const PAGE = 50;

export function show(main, arg) {
  const actor = el('input', { id: 'au-actor', placeholder: 'actor', spellcheck: 'false' });
  const act = el('input', { id: 'au-action', placeholder: 'action (order.cancel, refund.settle…)', spellcheck: 'false' });
  const subject = el('input', { id: 'au-subject', placeholder: 'subject (order_no, pay_no, event)', value: arg || '', spellcheck: 'false' });
  const list = el('div');
  const form = el('form', { class: 'filters' }, actor, act, subject, el('button', { type: 'submit' }, 'Filter'));
  main.append(el('h1', {}, 'Audit log'), form, list);
  let rows = [];

  async function load(after) {
    const res = await api('GET', `/ops/audit${query({ actor: actor.value.trim(), action: act.value.trim(), subject: subject.value.trim(), after, limit: PAGE })}`);
    if (!after) rows = [];
    clear(list);
    if (!res.ok) { list.append(answer(res)); return; }
    rows = rows.concat(res.body.entries);
    list.append(section(`${rows.length} row${rows.length === 1 ? '' : 's'}`, table([
      ['When', a => when(a.created_at)], ['Who', a => a.actor], ['Action', a => a.action],
      ['Subject', a => a.subject], ['Detail', a => a.detail], ['Request', a => a.request_id],
    ], rows, 'No row matches.'),
    res.body.next_after !== undefined ? button('More', () => load(res.body.next_after)) : null));
  }
  form.addEventListener('submit', e => { e.preventDefault(); load(); });
  load();
  return null;
}
