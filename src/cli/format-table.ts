/** Plain-text columns for a terminal: a header row, then one row per record, cells cut at `maxCell`. */
export function formatTable<C extends string>(columns: readonly C[], rows: readonly Record<C, unknown>[], maxCell = 60): string {
  const cells = rows.map((r) => columns.map((c) => String(r[c] ?? '').slice(0, maxCell)));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const line = (values: readonly string[]) => values.map((v, i) => v.padEnd(widths[i]!)).join('  ').trimEnd();
  return `${[line(columns), ...cells.map(line)].join('\n')}\n`;
}
