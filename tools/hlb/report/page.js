/* Draws the charts of an hlb report page with Chart.js (inlined before this script) from the
 * JSON in #hlb-data, one section at a time (the picker chooses a simulator policy). After a
 * chart is drawn its figure gets data-ticks-x, data-ticks-y and data-legend: the tick labels
 * and legend entries Chart.js computed, so a headless browser's DOM shows what was drawn. */
(function () {
  'use strict';
  const started = performance.now();
  const data = JSON.parse(document.getElementById('hlb-data').textContent);
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.font.size = 12;
  const GREY = '#666666';

  function seconds(v) {
    const a = Math.abs(v);
    if (a === 0) return '0 s';
    if (a < 1e-3) return +(v * 1e6).toPrecision(3) + ' µs';
    if (a < 1) return +(v * 1e3).toPrecision(3) + ' ms';
    return +v.toPrecision(4) + ' s';
  }
  function count(v) {
    /* Three significant digits in exponent form: one made neighbouring ticks read the same
     * (1.8e+6 and 1.6e+6 both "2e+6"). */
    return Math.abs(v) >= 1e4 ? v.toExponential(2).replace(/\.?0+e/, 'e') : String(+v.toPrecision(4));
  }
  function alpha(hex, a) {
    const n = parseInt(hex.slice(1), 16);
    return 'rgba(' + (n >> 16) + ',' + ((n >> 8) & 255) + ',' + (n & 255) + ',' + a + ')';
  }
  const patterns = {};
  /* Black crossed with white: a dropped block, unlike the throttle's diagonal hatch. */
  function crossed() {
    if (patterns.crossed) return patterns.crossed;
    const c = document.createElement('canvas');
    c.width = c.height = 8;
    const g = c.getContext('2d');
    g.fillStyle = '#000000';
    g.fillRect(0, 0, 8, 8);
    g.strokeStyle = '#ffffff';
    g.lineWidth = 1.2;
    g.beginPath();
    g.moveTo(0, 0); g.lineTo(8, 8); g.moveTo(8, 0); g.lineTo(0, 8);
    g.stroke();
    return (patterns.crossed = g.createPattern(c, 'repeat'));
  }
  function hatch(color) {
    if (patterns[color]) return patterns[color];
    const c = document.createElement('canvas');
    c.width = c.height = 8;
    const g = c.getContext('2d');
    g.fillStyle = alpha(color, 0.55);
    g.fillRect(0, 0, 8, 8);
    g.strokeStyle = '#ffffff';
    g.lineWidth = 2;
    g.beginPath();
    g.moveTo(0, 8); g.lineTo(8, 0); g.moveTo(-2, 2); g.lineTo(2, -2); g.moveTo(6, 10); g.lineTo(10, 6);
    g.stroke();
    return (patterns[color] = g.createPattern(c, 'repeat'));
  }
  /* A log axis labels 1, 2 and 5 times a power of ten only, so its labels never overlap. */
  function axis(title, type, fmt, extra) {
    const log = type === 'logarithmic';
    return Object.assign({type: type, title: {display: true, text: title},
                          ticks: {callback: function (v) {
                            const m = +v / Math.pow(10, Math.floor(Math.log10(+v) + 1e-9));
                            return !log || [1, 2, 5].some(function (k) { return Math.abs(m - k) < 1e-6; }) ? fmt(+v) : '';
                          }}}, extra || {});
  }
  function spread(values) {
    let lo = Infinity, hi = 0;
    for (const v of values) if (v > 0) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
    return hi / lo;
  }
  /* Legend entries with neutral swatches (the Gantt's kinds of time, not PUs). */
  function legendOf(items) {
    return {labels: {generateLabels: function () {
      return items.map(function (it, i) {
        return {text: it[0], fillStyle: it[1], strokeStyle: it[2] || it[1], lineWidth: 1,
                datasetIndex: i, hidden: false};
      });
    }}, onClick: null};
  }

  function gantt(run) {
    const names = run.pus.map(function (p) { return p.name; });
    const kinds = {compute: [], transfer: [], throttle: [], failed: [], dropped: [], idle: []};
    const lastEnd = run.pus.map(function () { return 0; });
    run.gantt.forEach(function (e, i) {
      const pu = e[0], s = e[1], end = e[2], th = run.pus[pu].throttle || 1;
      if (s > lastEnd[pu] + 1e-12) kinds.idle.push({x: [lastEnd[pu], s], y: names[pu], e: -1, pu: pu});
      lastEnd[pu] = Math.max(lastEnd[pu], end);
      if (e[8] === 2) { kinds.dropped.push({x: [s, end], y: names[pu], e: i, pu: pu}); return; }
      if (e[8]) { kinds.failed.push({x: [s, end], y: names[pu], e: i, pu: pu}); return; }
      const tr = Math.min(e[7], end - s), cp = Math.min(e[6], end - s - tr);
      const real = cp / th;
      if (tr > 0) kinds.transfer.push({x: [s, s + tr], y: names[pu], e: i, pu: pu});
      kinds.compute.push({x: [s + tr, s + tr + real], y: names[pu], e: i, pu: pu});
      if (th > 1) kinds.throttle.push({x: [s + tr + real, s + tr + cp], y: names[pu], e: i, pu: pu});
    });
    run.pus.forEach(function (p, pu) {
      if (run.makespan > lastEnd[pu] + 1e-12) kinds.idle.push({x: [lastEnd[pu], run.makespan], y: names[pu], e: -1, pu: pu});
    });
    const fill = {
      compute: function (c) { return c.raw ? run.pus[c.raw.pu].color : GREY; },
      transfer: function (c) { return c.raw ? alpha(run.pus[c.raw.pu].color, 0.3) : GREY; },
      throttle: function (c) { return c.raw ? hatch(run.pus[c.raw.pu].color) : GREY; },
      failed: function () { return '#000000'; },
      dropped: function () { return crossed(); },
      idle: function () { return '#f2f2f2'; }
    };
    /* Outlines only on bars a few pixels wide: on hundreds of sub-pixel blocks they were all
     * that showed, and a busy PU's row read as grey, idle. */
    function border(w) {
      return function (c) {
        const d = c.raw, area = c.chart.chartArea;
        if (!d || !area) return w;
        return (d.x[1] - d.x[0]) / run.makespan * (area.right - area.left) < 4 ? 0 : w;
      };
    }
    const order = ['idle', 'transfer', 'compute', 'throttle', 'failed', 'dropped'];
    const datasets = order.map(function (k) {
      return {label: k, data: kinds[k], backgroundColor: fill[k], grouped: false,
              borderColor: k === 'idle' ? '#bbbbbb' : 'rgba(0,0,0,0.25)', borderWidth: border(k === 'idle' ? 1 : 0.5),
              borderSkipped: false, barPercentage: 0.9, categoryPercentage: 0.9};
    });
    const entries = [['compute', GREY], ['transfer', alpha(GREY, 0.3), GREY],
                     ['emulated throttle', hatch(GREY), GREY], ['failed block', '#000000']];
    /* A released PU's block in flight is dropped, not failed: crossed black, named only when
     * there is one, as the table and the list name it. */
    if (kinds.dropped.length) entries.push(['dropped at release', crossed(), '#000000']);
    const legend = legendOf(entries.concat([['idle', '#f2f2f2', '#bbbbbb']]));
    return {type: 'bar', data: {labels: names, datasets: datasets},
      options: {indexAxis: 'y',
        scales: {x: axis('time since the run started', 'linear', seconds, {min: 0, max: run.makespan}),
                 y: {type: 'category', title: {display: true, text: 'PU'}}},
        plugins: {legend: legend, tooltip: {callbacks: {label: function (c) {
          const d = c.raw; if (d.e < 0) return 'idle ' + seconds(d.x[1] - d.x[0]);
          const e = run.gantt[d.e];
          let s = c.dataset.label + ' ' + seconds(d.x[1] - d.x[0]) + ' of a ' +
            (e[9] > 1 ? e[9] + '-block group, ' : 'block [' + e[4] + ', +' + e[3] + '), ') + e[3] + ' items, ' +
            seconds(e[2] - e[1]) + ' from ' + seconds(e[1]);
          if (e[5] > 0) s += ', predicted ' + seconds(e[5]);
          return s;
        }}}}},
      height: Math.max(160, 46 * names.length + 90)};
  }

  function perPu(run, make) {
    return run.pus.map(function (p, pu) {
      return Object.assign({label: p.name, borderColor: p.color, backgroundColor: alpha(p.color, 0.75),
                            pointRadius: 2.5}, make(p, pu));
    });
  }

  function sizes(run) {
    const ys = run.points.map(function (b) { return b[3]; });
    const log = spread(ys) > 50;
    return {type: 'scatter', data: {datasets: perPu(run, function (p, pu) {
      return {data: run.points.filter(function (b) { return b[0] === pu && !b[6]; })
                              .map(function (b) { return {x: b[1], y: b[3]}; })};
    })}, options: {scales: {x: axis('block start, time since the run started', 'linear', seconds, {min: 0, max: run.makespan}),
                            y: axis('block size (items)' + (log ? ', log scale' : ''), log ? 'logarithmic' : 'linear', count,
                                    log ? {} : {beginAtZero: true})}}};
  }

  function predicted(run, note) {
    const pts = run.points.filter(function (b) { return b[5] > 0 && !b[6]; });
    if (!pts.length) {
      note.textContent = 'No block in this trace carries a prediction' +
        (data.kind === 'sim' ? ' (simulator traces do not record them).' : ' (the policy made none).');
      return null;
    }
    let lo = Infinity, hi = 0;
    pts.forEach(function (b) { lo = Math.min(lo, b[5], b[2]); hi = Math.max(hi, b[5], b[2]); });
    const worst = pts.slice().sort(function (a, b) {
      return Math.abs(Math.log(b[2] / b[5])) - Math.abs(Math.log(a[2] / a[5]));
    }).filter(function (b) { return b[2] > 1.5 * b[5] || b[2] < b[5] / 1.5; }).slice(0, 5);
    const labels = worst.map(function (b) {
      return {x: b[5], y: b[2], text: run.pus[b[0]].name + ' [' + b[4] + ',+' + b[3] + ') ' + (b[2] / b[5]).toPrecision(2) + 'x'};
    });
    note.textContent = labels.length ? 'Labelled outliers: ' + labels.map(function (l) { return l.text; }).join('; ') + '.'
                                     : 'No block took more than 1.5x or less than 1/1.5 of its prediction.';
    const ds = perPu(run, function (p, pu) {
      return {data: pts.filter(function (b) { return b[0] === pu; }).map(function (b) { return {x: b[5], y: b[2]}; })};
    });
    ds.push({type: 'line', label: 'actual = predicted', data: [{x: lo, y: lo}, {x: hi, y: hi}],
             borderColor: '#000000', borderDash: [5, 4], borderWidth: 1, pointRadius: 0, backgroundColor: '#000000'});
    return {type: 'scatter', data: {datasets: ds},
      options: {scales: {x: axis('predicted time', 'logarithmic', seconds), y: axis('actual time', 'logarithmic', seconds)}},
      plugins: [{id: 'outliers', afterDatasetsDraw: function (chart) {
        const g = chart.ctx, x = chart.scales.x, y = chart.scales.y;
        g.save(); g.font = '11px sans-serif'; g.fillStyle = '#000000';
        labels.forEach(function (l) {
          const px = x.getPixelForValue(l.x), py = y.getPixelForValue(l.y);
          g.textAlign = px > chart.chartArea.right - 160 ? 'right' : 'left';
          g.fillText(l.text, px + (g.textAlign === 'left' ? 6 : -6), py - 4);
        });
        g.restore();
      }}]};
  }

  function fit(run, note) {
    const ds = [];
    const pts = run.points.filter(function (b) { return !b[6] && b[3] > 0 && b[2] > 0; });
    run.pus.forEach(function (p, pu) {
      ds.push({label: p.name + ' blocks', borderColor: p.color, backgroundColor: alpha(p.color, 0.75), pointRadius: 2.5,
               data: pts.filter(function (b) { return b[0] === pu; }).map(function (b) { return {x: b[3], y: b[2]}; })});
      if (p.curve) ds.push({type: 'line', label: p.name + (p.rate_only ? ' rate (one block size)' : ' fit (R² ' + (p.r2 === null ? '?' : p.r2.toFixed(3)) + ')'),
                            borderColor: p.color, backgroundColor: p.color, borderWidth: 2, pointRadius: 0,
                            data: p.curve.map(function (q) { return {x: q[0], y: q[1]}; })});
    });
    const none = run.pus.filter(function (p) { return !p.curve; }).map(function (p) { return p.name; });
    if (none.length) note.textContent = 'No curve for ' + none.join(', ') + ': no finished block.';
    return {type: 'scatter', data: {datasets: ds},
      options: {scales: {x: axis('block size (items)', 'logarithmic', count), y: axis('block time (compute + transfer)', 'logarithmic', seconds)}}};
  }

  function done(run) {
    return {type: 'line', data: {datasets: perPu(run, function (p, pu) {
      return {data: run.done[pu].map(function (q) { return {x: q[0], y: q[1]}; }), stepped: 'after', pointRadius: 0, borderWidth: 2,
              backgroundColor: p.color};
    })}, options: {scales: {x: axis('time since the run started', 'linear', seconds, {min: 0, max: run.makespan}),
                            y: axis('items done', 'linear', count, {min: 0})}}};
  }

  function tail(run, note) {
    let last = 0;
    run.pus.forEach(function (p, i) { if (p.last_end > run.pus[last].last_end) last = i; });
    const names = run.pus.map(function (p) { return p.name; });
    note.textContent = 'Everyone else waited for ' + run.pus[last].name + ', whose last block ended at ' +
      seconds(run.pus[last].last_end) + '. ' + run.pus.filter(function (p) { return p.stopped; })
        .map(function (p) { return p.name + ' was stopped early (' + p.stopped + ').'; }).join(' ');
    return {type: 'bar', data: {labels: names, datasets: [
      {label: 'until its last block ended', grouped: false, data: run.pus.map(function (p, i) { return {x: [0, p.last_end], y: names[i]}; }),
       backgroundColor: run.pus.map(function (p) { return alpha(p.color, 0.8); })},
      {label: 'waited at the tail', grouped: false, data: run.pus.map(function (p, i) { return {x: [p.last_end, run.makespan], y: names[i]}; }),
       backgroundColor: '#bbbbbb'}]},
      options: {indexAxis: 'y', scales: {x: axis('time since the run started', 'linear', seconds, {min: 0, max: run.makespan}),
                                         y: {type: 'category', title: {display: true, text: 'PU'}}},
                plugins: {legend: legendOf([['until its last block ended (PU colour)', GREY], ['waited at the tail', '#bbbbbb']]),
                          tooltip: {callbacks: {label: function (c) { return c.dataset.label + ': ' + seconds(c.raw.x[1] - c.raw.x[0]); }}}}},
      height: Math.max(140, 40 * names.length + 90)};
  }

  /* SPMD traces: one point per sampling interval, x the iterations done at its end. */
  function perRank(run, value, extra) {
    return run.ranks.map(function (p, r) {
      return Object.assign({label: p.name, borderColor: p.color, backgroundColor: p.color, pointRadius: 1.5, borderWidth: 2,
                            data: run.intervals.map(function (iv) { return {x: iv.it, y: value(iv, r)}; })}, extra || {});
    });
  }
  const iterations = function (v) { return String(Math.round(v)); };
  const percent = function (v) { return +(100 * v).toPrecision(3) + ' %'; };
  function spmdImbalance(run, note) {
    const moves = run.intervals.filter(function (iv) { return iv.moved !== null; });
    note.textContent = moves.length ? 'Rows moved after ' + moves.length + ' interval' + (moves.length > 1 ? 's' : '') + '.'
                                    : 'No rows moved.';
    return {type: 'line', data: {datasets: [
      {label: 'imbalance', borderColor: GREY, backgroundColor: GREY, pointRadius: 1.5, borderWidth: 2,
       data: run.intervals.map(function (iv) { return {x: iv.it, y: iv.imb}; })},
      {label: 'rows moved after this interval', type: 'scatter', pointStyle: 'triangle', pointRadius: 7,
       borderColor: '#D55E00', backgroundColor: '#D55E00',
       data: moves.map(function (iv) { return {x: iv.it, y: iv.imb}; })}]},
      options: {scales: {x: axis('iterations done', 'linear', iterations), y: axis('imbalance', 'linear', percent, {min: 0})},
                plugins: {tooltip: {callbacks: {label: function (c) {
                  const iv = run.intervals.find(function (v) { return v.it === c.raw.x; });
                  return 'iteration ' + iv.it + ': imbalance ' + percent(iv.imb) + ', predicted gain ' + seconds(iv.gain || 0) +
                    (iv.moved !== null ? ', ' + iv.moved + ' rows moved in ' + seconds(iv.cost || 0) : '');
                }}}}}};
  }
  function spmdTime(run) {
    return {type: 'line', data: {datasets: perRank(run, function (iv, r) { return iv.compute[r]; })},
            options: {scales: {x: axis('iterations done', 'linear', iterations), y: axis('compute time in the interval', 'linear', seconds, {min: 0})}}};
  }
  function spmdRows(run) {
    return {type: 'line', data: {datasets: perRank(run, function (iv, r) { return iv.rows[r]; }, {stepped: 'before'})},
            options: {scales: {x: axis('iterations done', 'linear', iterations), y: axis('rows owned', 'linear', count, {min: 0})}}};
  }
  function spmdMoves(run, note) {
    const moves = run.intervals.filter(function (iv) { return iv.moved !== null; });
    if (!moves.length) { note.textContent = 'No redistribution: the split stayed as it started.'; return null; }
    const total = moves.reduce(function (a, iv) { return a + (iv.cost || 0); }, 0);
    note.textContent = moves.length + ' redistribution' + (moves.length > 1 ? 's' : '') + ', ' + seconds(total) + ' in all.';
    const last = run.intervals[run.intervals.length - 1].it;
    return {type: 'bar', data: {datasets: [
      {label: 'rows moved', backgroundColor: '#0072B2', barThickness: 12,
       data: moves.map(function (iv) { return {x: iv.it, y: iv.moved}; })}]},
      options: {scales: {x: axis('redistribution after iteration', 'linear', iterations, {min: 0, max: last}),
                         y: axis('rows moved', 'linear', count, {min: 0})},
                plugins: {tooltip: {callbacks: {label: function (c) {
                  const iv = moves[c.dataIndex];
                  return iv.moved + ' rows moved in ' + seconds(iv.cost || 0) + '; predicted gain ' + seconds(iv.gain || 0);
                }}}}}};
  }

  const makers = {gantt: gantt, sizes: sizes, predicted: predicted, fit: fit, done: done, tail: tail,
                  imbalance: spmdImbalance, ranktime: spmdTime, rows: spmdRows, moves: spmdMoves};

  /* What Chart.js computed, copied into the DOM. */
  function record(fig, chart) {
    const labels = function (s) { return s.ticks.map(function (t) { return Array.isArray(t.label) ? t.label.join(' ') : t.label; })
      .filter(function (l) { return l !== '' && l !== undefined; }).join('|'); };
    fig.dataset.ticksX = labels(chart.scales.x);
    fig.dataset.ticksY = labels(chart.scales.y);
    fig.dataset.titleX = chart.scales.x.options.title.text;
    fig.dataset.titleY = chart.scales.y.options.title.text;
    fig.dataset.legend = (chart.legend && chart.legend.legendItems || []).map(function (i) { return i.text; }).join('|');
    fig.dataset.drawn = 'yes';
  }

  function notes(run, fig) {
    const note = fig.querySelector('.note');
    const kind = fig.dataset.chart;
    if (kind === 'gantt' && run.gantt_group > 1)
      note.textContent = 'Downsampled: ' + run.n_blocks + ' blocks; up to ' + run.gantt_group +
        ' consecutive blocks of a PU are drawn as one bar whose parts are their summed transfer, compute and throttle times (failed blocks stay single).';
    if (kind !== 'gantt' && kind !== 'done' && kind !== 'tail' && run.points_stride > 1)
      note.textContent = 'Downsampled: every ' + run.points_stride + 'th of ' + run.n_blocks +
        ' blocks is drawn, plus every block that missed its prediction. ' + note.textContent;
    return note;
  }

  function drawSection(sec) {
    if (sec.dataset.drawn) return;
    sec.dataset.drawn = 'yes';
    const run = data.runs[+sec.dataset.index];
    sec.querySelectorAll('figure.chart').forEach(function (fig) {
      const note = fig.querySelector('.note');
      const cfg = makers[fig.dataset.chart](run, note);
      notes(run, fig);
      const box = fig.querySelector('.box');
      if (!cfg) { box.remove(); fig.dataset.drawn = 'no'; return; }
      if (cfg.height) box.style.height = cfg.height + 'px';
      const chart = new Chart(box.querySelector('canvas'), cfg);
      record(fig, chart);
    });
  }

  const sections = Array.from(document.querySelectorAll('section.run'));
  const picker = document.getElementById('picker');
  function show(i) {
    sections.forEach(function (s, k) { s.hidden = k !== i; });
    drawSection(sections[i]);
    if (picker) picker.value = String(i);
  }
  const hash = decodeURIComponent(location.hash.slice(1));
  if (hash === 'all') {
    sections.forEach(function (s) { s.hidden = false; drawSection(s); });
  } else {
    const m = /^run=(.*)$/.exec(hash);
    const at = m ? sections.findIndex(function (s) { return s.dataset.run === m[1]; }) : -1;
    show(at >= 0 ? at : 0);
  }
  if (picker) picker.addEventListener('change', function () {
    show(+picker.value);
    history.replaceState(null, '', '#run=' + encodeURIComponent(sections[+picker.value].dataset.run));
  });
  document.body.dataset.drawMs = (performance.now() - started).toFixed(1);
  document.body.dataset.charts = document.querySelectorAll('figure[data-drawn=yes]').length;
})();
