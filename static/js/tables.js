// On a narrow window (placement.css, max-width 760px) a table's rows stack
// their cells, each under its column's name, so every column - "more fit",
// utilization, free - is on screen without scrolling sideways: name every
// cell after its column's header (a cell spanning rows above takes its
// column in the rows it spans). Without this script the table scrolls.
'use strict';
document.querySelectorAll('main table').forEach((table) => {
  const heads = Array.from(table.querySelectorAll('thead th'), (th) => th.textContent.trim());
  if (!heads.length) return;
  table.classList.add('stackable');
  const spanning = [];   // column -> rows still taken by a cell above
  table.querySelectorAll('tbody tr').forEach((row) => {
    let column = 0;
    Array.from(row.children).forEach((cell) => {
      while (spanning[column] > 0) column += 1;
      if (heads[column] && cell.colSpan === 1 && !cell.hasAttribute('data-label')) {
        cell.setAttribute('data-label', heads[column]);
      }
      // A cell of several lines (a class per line, a note under a name)
      // goes under its name rather than beside it.
      if (cell.querySelector('div, ul, ol, dl, table, form, p')) cell.classList.add('lines');
      for (let i = 0; i < cell.colSpan; i += 1) spanning[column + i] = cell.rowSpan;
      column += cell.colSpan;
    });
    for (let i = 0; i < spanning.length; i += 1) spanning[i] = Math.max((spanning[i] || 0) - 1, 0);
  });
});
