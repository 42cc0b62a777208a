export interface ProgressBarOptions {
  total: number;
  /** Where the bar is drawn (stderr, when it is a terminal). */
  write: (text: string) => void;
  width?: number;
  /** Least time between two redraws, in ms. */
  everyMs?: number;
  now?: () => number;
  /** The text after the bar (default: `done/total`). */
  label?: (done: number, total: number) => string;
}

/** A one-line progress bar redrawn in place with `\r`: `[#######.............]  35/100`. */
export function createProgressBar({ total, write, width = 30, everyMs = 100, now = Date.now, label }: ProgressBarOptions) {
  let done = 0;
  let drawnAt = -Infinity;
  const draw = () => {
    const filled = total === 0 ? width : Math.min(width, Math.round((done / total) * width));
    const text = label ? label(done, total) : `${String(done).padStart(String(total).length)}/${total}`;
    write(`\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${text}`);
    drawnAt = now();
  };
  const moved = () => {
    if (done === total || now() - drawnAt >= everyMs) draw();
  };
  return {
    tick() {
      done++;
      moved();
    },
    /** Moves the bar to `value` of `total` (a position that is not a count: bytes, time). */
    update(value: number) {
      done = value;
      moved();
    },
    /** Draws the final state and ends the line. */
    finish() {
      draw();
      write('\n');
    },
  };
}
