/* Usage-trend charts of the dashboards: one SVG line chart per resource
 * class of used against capacity over time, with the forecast dashed up to
 * when used reaches capacity. Our own, small and dependency-free: it reads
 * the JSON the page embeds (Django's json_script, id "usage-trends-data")
 * and draws into each .trend-chart[data-resource-class]; nothing is fetched.
 *
 * Data per class: {name, points: [[time ms, capacity, used], ...] oldest
 * first, forecast: {status, slope_per_day, full_at (ms) | null}}.
 */
(function () {
  'use strict';

  var SVG = 'http://www.w3.org/2000/svg';
  var DAY = 86400000;
  var HEIGHT = 230;
  var MARGIN = {top: 26, right: 18, bottom: 30, left: 58};
  var COLOURS = {used: '#1f6feb', area: 'rgba(31, 111, 235, 0.13)', capacity: '#3d4a5c',
                 forecast: '#cf222e', grid: '#e3e8ee', text: '#5f6b7a'};
  var MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov',
                'Dec'];

  function el(name, attributes, parent) {
    var node = document.createElementNS(SVG, name);
    Object.keys(attributes || {}).forEach(function (key) {
      node.setAttribute(key, attributes[key]);
    });
    if (parent) { parent.appendChild(node); }
    return node;
  }

  function text(parent, x, y, content, attributes) {
    var node = el('text', Object.assign({x: x, y: y, fill: COLOURS.text, 'font-size': 11},
                                        attributes || {}), parent);
    node.textContent = content;
    return node;
  }

  /* Numbers in one unit chosen by the largest of them, so an axis reads
   * 0, 5k, 10k, 15k rather than 0, 5,000, 10k: 1,500 stays whole, 25,000
   * is 25k, 6,160,384 is 6.16M. */
  function formatter(largest) {
    var units = [[1e12, 1e12, 'T'], [1e9, 1e9, 'G'], [1e6, 1e6, 'M'], [1e4, 1e3, 'k']];
    for (var i = 0; i < units.length; i++) {
      if (Math.abs(largest) >= units[i][0]) {
        var unit = units[i];
        return function (value) {
          return value === 0 ? '0' : +(value / unit[1]).toPrecision(3) + unit[2];
        };
      }
    }
    return function (value) { return (+value.toPrecision(4)).toLocaleString('en'); };
  }

  function compact(value) { return formatter(value)(value); }

  /* Round steps (1, 2, 5 x 10^n) from 0 to at least `top`. */
  function valueTicks(top) {
    if (!(top > 0)) { return [0, 1]; }
    var rough = top / 4;
    var power = Math.pow(10, Math.floor(Math.log10(rough)));
    var step = [1, 2, 2.5, 5, 10].map(function (f) { return f * power; })
      .find(function (s) { return s >= rough; });
    var ticks = [];
    for (var v = 0; v < top + step * 0.999; v += step) { ticks.push(v); }
    return ticks;
  }

  function dateLabel(ms) {
    var d = new Date(ms);
    return MONTHS[d.getUTCMonth()] + ' ' + d.getUTCDate();
  }

  /* A moment as every dashboard prints it (templatetags.when): '2026-11-28 19:04 UTC'. */
  function moment(ms) {
    return new Date(ms).toISOString().slice(0, 10) + ' ' + clock(new Date(ms)) + ' UTC';
  }

  function clock(d) {
    return String(d.getUTCHours()).padStart(2, '0') + ':' +
      String(d.getUTCMinutes()).padStart(2, '0');
  }

  /* A time-axis label: the date, or on an axis of hours the time of day
   * (the date at midnight). */
  function tickLabel(ms, hours) {
    var d = new Date(ms);
    return hours && (d.getUTCHours() || d.getUTCMinutes()) ? clock(d) : dateLabel(ms);
  }

  /* Midnights (UTC) a whole number of days apart, at most `most` of them;
   * hours for a span under two days. */
  function timeTicks(start, end, most) {
    var span = end - start;
    var steps = span < 2 * DAY ? [3, 6, 12].map(function (h) { return h * 3600000; })
      : [1, 2, 3, 7, 14, 30, 60, 91, 182, 365].map(function (d) { return d * DAY; });
    var step = steps.find(function (s) { return span / s <= most; }) || steps[steps.length - 1];
    var first = Math.ceil(start / step) * step;
    var ticks = [];
    for (var t = first; t <= end; t += step) { ticks.push(t); }
    return {ticks: ticks, hours: span < 2 * DAY};
  }

  function draw(container, trend) {
    var points = trend.points;
    var forecast = trend.forecast;
    var width = Math.max(container.clientWidth, 280);
    var inner = {w: width - MARGIN.left - MARGIN.right, h: HEIGHT - MARGIN.top - MARGIN.bottom};
    var first = points[0];
    var last = points[points.length - 1];
    var start = first[0];
    var end = last[0];
    if (end - start < 3600000) { start = end - DAY; }  // one snapshot: a day's width
    var span = end - start;

    // A forecast that fills shows its line up to full, within 60% more of
    // the span (or a week, for a short history).
    var filling = forecast.status === 'filling' && forecast.full_at;
    var projectedEnd = end;
    if (filling) {
      projectedEnd = Math.min(forecast.full_at, end + Math.max(span * 0.6, 7 * DAY));
      projectedEnd = Math.max(projectedEnd, end + span * 0.1);
    }
    var top = 0;
    points.forEach(function (p) { top = Math.max(top, p[1], p[2]); });
    var ticks = valueTicks(top * 1.05);
    var yMax = ticks[ticks.length - 1];
    var x = function (t) { return MARGIN.left + (t - start) / (projectedEnd - start) * inner.w; };
    var y = function (v) { return MARGIN.top + inner.h - v / yMax * inner.h; };
    var xy = function (t, v) { return x(t).toFixed(1) + ',' + y(v).toFixed(1); };

    var svg = el('svg', {width: width, height: HEIGHT, viewBox: '0 0 ' + width + ' ' + HEIGHT,
                         role: 'img', class: 'trend-svg',
                         'font-family': 'system-ui, -apple-system, "Segoe UI", sans-serif'});
    container.replaceChildren(svg);  // attached, so text can be measured
    // A series without capacity (a project's use) draws its use alone.
    var bounded = points.some(function (p) { return p[1] !== null; });
    el('title', {}, svg).textContent = trend.name + ': ' + compact(last[2]) +
      (bounded ? ' of ' + compact(last[1]) : '') + ' used on ' + moment(end);

    // Value grid and axis.
    var label = formatter(yMax);
    ticks.forEach(function (v) {
      el('line', {x1: MARGIN.left, x2: MARGIN.left + inner.w, y1: y(v), y2: y(v),
                  stroke: COLOURS.grid, 'stroke-width': 1}, svg);
      text(svg, MARGIN.left - 8, y(v) + 4, label(v), {'text-anchor': 'end'});
    });
    // Time axis: dates (UTC) under tick marks.
    var times = timeTicks(start, projectedEnd, Math.max(2, Math.floor(inner.w / 55)));
    el('line', {x1: MARGIN.left, x2: MARGIN.left + inner.w, y1: y(0), y2: y(0),
                stroke: COLOURS.capacity, 'stroke-width': 1}, svg);
    times.ticks.forEach(function (t) {
      if (x(t) > MARGIN.left + inner.w - 16) { return; }  // its label would be cut off
      el('line', {x1: x(t), x2: x(t), y1: y(0), y2: y(0) + 4, stroke: COLOURS.capacity}, svg);
      text(svg, x(t), y(0) + 17, tickLabel(t, times.hours), {'text-anchor': 'middle',
                                                            class: 'time-tick'});
    });

    // Used: an area under its line; capacity: a step line (it changes at once).
    var used = points.map(function (p) { return xy(p[0], p[2]); });
    el('polygon', {points: xy(first[0], 0) + ' ' + used.join(' ') + ' ' + xy(last[0], 0),
                   fill: COLOURS.area, stroke: 'none'}, svg);
    var capacity = points.length === 1 ? [xy(start, first[1])] : [];
    points.forEach(function (p, i) {
      if (i > 0) { capacity.push(xy(p[0], points[i - 1][1])); }
      capacity.push(xy(p[0], p[1]));
    });
    if (filling) { capacity.push(xy(projectedEnd, last[1])); }
    if (bounded) {
      el('polyline', {points: capacity.join(' '), fill: 'none', stroke: COLOURS.capacity,
                      'stroke-width': 1.5, class: 'capacity'}, svg);
    }
    el('polyline', {points: used.join(' '), fill: 'none', stroke: COLOURS.used,
                    'stroke-width': 2, 'stroke-linejoin': 'round', class: 'used'}, svg);
    if (points.length === 1) {
      el('circle', {cx: x(last[0]), cy: y(last[2]), r: 3, fill: COLOURS.used}, svg);
    }

    // The forecast: dashed from the newest use at the fitted slope.
    if (filling) {
      var reach = last[2] + forecast.slope_per_day * (projectedEnd - end) / DAY;
      el('line', {x1: x(end), y1: y(last[2]), x2: x(projectedEnd), y2: y(Math.min(reach, last[1])),
                  stroke: COLOURS.forecast, 'stroke-width': 2, 'stroke-dasharray': '6 4',
                  class: 'forecast'}, svg);
      if (forecast.full_at <= projectedEnd) {
        el('circle', {cx: x(forecast.full_at), cy: y(last[1]), r: 4, fill: COLOURS.forecast,
                      class: 'full-at'}, svg);
        text(svg, x(forecast.full_at) - 6, y(last[1]) - 7, 'full ~' + dateLabel(forecast.full_at),
             {'text-anchor': 'end', fill: COLOURS.forecast, 'font-weight': 600});
      }
    }

    // Legend.
    var legend = [['used', COLOURS.used, '']];
    if (bounded) { legend.push(['capacity', COLOURS.capacity, '']); }
    if (filling) { legend.push(['forecast', COLOURS.forecast, '6 4']); }
    var at = MARGIN.left;
    legend.forEach(function (item) {
      el('line', {x1: at, x2: at + 18, y1: 11, y2: 11, stroke: item[1], 'stroke-width': 2,
                  'stroke-dasharray': item[2]}, svg);
      at += text(svg, at + 23, 15, item[0]).getComputedTextLength() + 40;
    });

    hoverable(svg, container, points, width, inner, x, y);
    container.dataset.drawn = String(points.length);
  }

  function exact(value) {
    return Number(value).toLocaleString('en', {maximumFractionDigits: 2});
  }

  /* Values on hover: the snapshot nearest the pointer, marked, with its
   * time and numbers in a box (also in container.dataset.hover). */
  function hoverable(svg, container, points, width, inner, x, y) {
    var hover = el('g', {class: 'hover', visibility: 'hidden', 'pointer-events': 'none'}, svg);
    var line = el('line', {y1: MARGIN.top, y2: y(0), stroke: COLOURS.text,
                           'stroke-dasharray': '2 3'}, hover);
    var dot = el('circle', {r: 4, fill: COLOURS.used}, hover);
    var box = el('rect', {height: 36, rx: 4, fill: '#fff', stroke: COLOURS.grid}, hover);
    var when = text(hover, 0, 0, '', {'font-weight': 600});
    var what = text(hover, 0, 0, '');
    var area = el('rect', {x: MARGIN.left, y: MARGIN.top, width: inner.w, height: inner.h,
                           fill: 'transparent', class: 'hover-area'}, svg);
    area.addEventListener('mousemove', function (event) {
      var bounds = svg.getBoundingClientRect();
      var px = (event.clientX - bounds.left) * width / bounds.width;
      var nearest = points[0];
      points.forEach(function (p) {
        if (Math.abs(x(p[0]) - px) < Math.abs(x(nearest[0]) - px)) { nearest = p; }
      });
      var at = x(nearest[0]);
      line.setAttribute('x1', at);
      line.setAttribute('x2', at);
      dot.setAttribute('cx', at);
      dot.setAttribute('cy', y(nearest[2]));
      when.textContent = moment(nearest[0]);
      what.textContent = 'used ' + exact(nearest[2]) + (nearest[1] === null ? '' :
        ' of ' + exact(nearest[1]) +
        (nearest[1] ? ' (' + Math.round(100 * nearest[2] / nearest[1]) + '%)' : ''));
      hover.setAttribute('visibility', 'visible');
      var boxWidth = Math.max(when.getComputedTextLength(), what.getComputedTextLength()) + 16;
      var left = at + 10 + boxWidth > MARGIN.left + inner.w ? at - 10 - boxWidth : at + 10;
      box.setAttribute('x', left);
      box.setAttribute('y', MARGIN.top + 2);
      box.setAttribute('width', boxWidth);
      when.setAttribute('x', left + 8);
      when.setAttribute('y', MARGIN.top + 16);
      what.setAttribute('x', left + 8);
      what.setAttribute('y', MARGIN.top + 31);
      container.dataset.hover = when.textContent + ': ' + what.textContent;
    });
    area.addEventListener('mouseleave', function () {
      hover.setAttribute('visibility', 'hidden');
    });
  }

  function drawAll() {
    var source = document.getElementById('usage-trends-data');
    if (!source) { return; }
    var byName = {};
    JSON.parse(source.textContent).forEach(function (trend) { byName[trend.name] = trend; });
    document.querySelectorAll('.trend-chart[data-resource-class]').forEach(function (container) {
      var trend = byName[container.dataset.resourceClass];
      if (trend && trend.points.length) { draw(container, trend); }
    });
  }

  var resizing;
  window.addEventListener('resize', function () {
    clearTimeout(resizing);
    resizing = setTimeout(drawAll, 150);
  });
  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', drawAll);
  } else {
    drawAll();
  }
}());
