/**
 * Stored values can come from an import file or a sender: control characters (C0, DEL, C1) are
 * printed as `\xNN` so they cannot move the cursor, retitle or clear the terminal.
 */
export function escapeControl(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** Plain-text columns for a terminal: a header row, then one row per record, cells escaped and cut visibly (`...`) at `maxCell`. */
export function formatTable<C extends string>(columns: readonly C[], rows: readonly Record<C, unknown>[], maxCell = 60): string {
  const cells = rows.map((r) => columns.map((c) => cut(escapeControl(String(r[c] ?? '')), maxCell)));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const line = (values: readonly string[]) => values.map((v, i) => v.padEnd(widths[i]!)).join('  ').trimEnd();
  return `${[line(columns), ...cells.map(line)].join('\n')}\n`;
}

/** `text` within `max` characters, ending in `...` when something was left out. */
export function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, Math.max(0, max - 3))}...`;
}
