// On a narrow window (placement.css, max-width 760px) a table's rows stack
// their cells, each under its column's name, so every column - "more fit",
// utilization, free - is on screen without scrolling sideways: name every
// cell after its column's header. Without this script the table scrolls.
'use strict';
document.querySelectorAll('main table').forEach((table) => {
  const heads = Array.from(table.querySelectorAll('thead th'), (th) => th.textContent.trim());
  if (!heads.length) return;
  table.classList.add('stackable');
  table.querySelectorAll('tbody tr').forEach((row) => {
    Array.from(row.children).forEach((cell, i) => {
      if (heads[i] && cell.colSpan === 1 && !cell.hasAttribute('data-label')) {
        cell.setAttribute('data-label', heads[i]);
      }
      // A cell of several lines (a class per line, a note under a name)
      // goes under its name rather than beside it.
      if (cell.querySelector('div, ul, ol, dl, table, form, p')) cell.classList.add('lines');
    });
  });
});
