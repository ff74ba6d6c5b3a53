// chart.js - small SVG charts drawn from numbers; labels are text nodes.
import { svg, el } from './dom.js';

const PALETTE = 8; // colours c0..c7 in console.css

// Horizontal bars: items [{label, value}].
export function bars(items, unit) {
  const max = Math.max(1, ...items.map(i => i.value));
  const rowH = 18, w = 420, labelW = 190;
  const g = svg('svg', { viewBox: `0 0 ${w} ${Math.max(1, items.length) * rowH + 4}`, class: 'chart', role: 'img' });
  items.forEach((it, n) => {
    const y = n * rowH + 2, bw = Math.max(1, (w - labelW - 60) * it.value / max);
    g.append(svg('text', { x: 0, y: y + 12, class: 'label' }, it.label),
      svg('rect', { x: labelW, y, width: bw, height: rowH - 5, class: `c${n % PALETTE}` }),
      svg('text', { x: labelW + bw + 4, y: y + 12, class: 'value' }, `${it.value}${unit || ''}`));
  });
  if (!items.length) g.append(svg('text', { x: 0, y: 14, class: 'label' }, 'nothing counted yet'));
  return g;
}

// Lines over time: series [{label, points: [number]}], all of one length.
export function lines(series, xLabel) {
  const w = 420, h = 120, pad = 24;
  const n = Math.max(2, ...series.map(s => s.points.length));
  const max = Math.max(1, ...series.flatMap(s => s.points));
  const g = svg('svg', { viewBox: `0 0 ${w} ${h + 16}`, class: 'chart', role: 'img' });
  g.append(svg('line', { x1: pad, y1: h, x2: w, y2: h, class: 'axis' }),
    svg('text', { x: 0, y: 10, class: 'label' }, String(Math.round(max * 10) / 10)),
    svg('text', { x: 0, y: h, class: 'label' }, '0'),
    svg('text', { x: pad, y: h + 14, class: 'label' }, xLabel));
  series.forEach((s, i) => {
    const pts = s.points.map((v, j) => `${pad + (w - pad) * j / (n - 1)},${h - (h - 4) * v / max}`).join(' ');
    g.append(svg('polyline', { points: pts, class: `line c${i % PALETTE}` }));
    // a dot on each point: one reading is a point, not yet a line
    s.points.forEach((v, j) => g.append(svg('circle', { cx: pad + (w - pad) * j / (n - 1), cy: h - (h - 4) * v / max, r: 2.5, class: `dot c${i % PALETTE}` })));
  });
  const last = s => Math.round(s.points.at(-1) * 10) / 10;
  return el('figure', {}, g, el('figcaption', {}, series.map((s, i) => el('span', { class: `key c${i % PALETTE}` }, `${s.label} ${last(s)}`))));
}
