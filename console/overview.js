// overview.js - what the money is doing: counts from GET /ops/summary
// (this instance's counters) and GET /ops/reconcile (the databases now),
// read when the page opens, FIRST_MS later, then every REFRESH_MS. The
// per-minute chart is the difference between reads, so it starts when the
// page opens (its first point FIRST_MS later).
import { api } from './api.js';
import { el, clear } from './dom.js';
import { bars, lines } from './chart.js';
import { section } from './ui.js';

const REFRESH_MS = 10000;
const FIRST_MS = 2000; // the second read, so the rate shows soon
const KEEP = 30; // reads kept for the rate chart

export function show(main) {
  const tiles = el('div', { class: 'tiles' });
  const totals = el('div');
  const rates = el('div');
  const note = el('p', { class: 'hint' });
  main.append(el('h1', {}, 'Overview'), tiles,
    section('Callbacks per minute, by gateway and result', rates),
    section('Callbacks since this instance started', totals), note);
  const samples = [];
  let timer = null, stopped = false;

  async function refresh() {
    const [sum, rec, failed] = await Promise.all([api('GET', '/ops/summary'), api('GET', '/ops/reconcile'),
      api('GET', '/ops/refund-requests?state=FAILED&limit=100')]);
    if (stopped) return;
    if (!sum.ok) { clear(tiles).append(el('p', { class: 'error' }, `summary: ${sum.status} ${sum.text}`)); return; }
    const s = sum.body, r = rec.ok ? rec.body : null;
    const series = {};
    for (const c of s.callbacks) series[`${c.gateway} ${c.result}`] = c.count;
    for (const c of s.rejections) series[`${c.gateway} refused ${c.reason}`] = c.count;
    samples.push({ t: Date.now(), series });
    if (samples.length > KEEP) samples.shift();
    clear(tiles).append(
      tile('Callbacks', s.callbacks.reduce((a, c) => a + c.count, 0), 'since start'),
      tile('Signature rejections', s.signature_rejections, 'since start', s.signature_rejections > 0),
      tile('Double payments waiting', r ? r.refund_required.count : '?', 'to refund', r && r.refund_required.count > 0, '#/queue'),
      failed.ok ? tile('Refunds failing', `${failed.body.refunds.length}${failed.body.next_after ? '+' : ''}`, 'FAILED at the gateway', failed.body.refunds.length > 0, '#/queue')
        : tile('Refunds failing', '—', failed.status === 404 ? 'no refund records here' : `unknown (${failed.status})`),
      tile('Dead events', r ? r.outbox.dead : '?', `${r ? r.outbox.pending : '?'} pending`, r && r.outbox.dead > 0, '#/events'),
      tile('Stale WAIT_PAY orders', r ? r.wait_pay_stale.count : '?', r ? `older than ${r.wait_pay_stale.older_than_s} s` : '', r && r.wait_pay_stale.count > 0, '#/stale'));
    clear(totals).append(bars(Object.entries(series).map(([label, value]) => ({ label, value }))));
    clear(rates).append(rateChart());
    note.textContent = `Read ${new Date().toLocaleTimeString()}; refreshed every ${REFRESH_MS / 1000} s. Counters are this instance's since it started ${s.uptime_s} s ago.`;
  }

  function rateChart() {
    if (samples.length < 2) return el('p', { class: 'empty' }, `The rate appears after the next read (${FIRST_MS / 1000} s).`);
    const names = [...new Set(samples.flatMap(x => Object.keys(x.series)))];
    const series = names.map(name => ({
      label: name,
      points: samples.slice(1).map((x, i) => {
        const prev = samples[i], dt = (x.t - prev.t) / 60000;
        return Math.max(0, ((x.series[name] || 0) - (prev.series[name] || 0)) / dt);
      }),
    }));
    return lines(series, `last ${Math.round((samples.at(-1).t - samples[0].t) / 1000)} s, per minute`);
  }

  refresh();
  timer = setTimeout(() => {
    refresh();
    if (!stopped) timer = setInterval(refresh, REFRESH_MS);
  }, FIRST_MS);
  return { stop() { stopped = true; clearTimeout(timer); clearInterval(timer); } };
}

function tile(label, value, sub, alert, href) {
  const t = el('div', { class: alert ? 'tile alert' : 'tile' },
    el('div', { class: 'tile-label' }, label), el('div', { class: 'tile-value' }, String(value)),
    el('div', { class: 'tile-sub' }, sub));
  return href ? el('a', { href, class: 'tile-link' }, t) : t;
}
