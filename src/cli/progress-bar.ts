export interface ProgressBarOptions {
  total: number;
  /** Where the bar is drawn (stderr, when it is a terminal). */
  write: (text: string) => void;
  width?: number;
  /** Least time between two redraws, in ms. */
  everyMs?: number;
  now?: () => number;
}

/** A one-line progress bar redrawn in place with `\r`: `[#######.............]  35/100`. */
export function createProgressBar({ total, write, width = 30, everyMs = 100, now = Date.now }: ProgressBarOptions) {
  let done = 0;
  let drawnAt = -Infinity;
  const draw = () => {
    const filled = total === 0 ? width : Math.round((done / total) * width);
    write(`\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(done).padStart(String(total).length)}/${total}`);
    drawnAt = now();
  };
  return {
    tick() {
      done++;
      if (done === total || now() - drawnAt >= everyMs) draw();
    },
    /** Draws the final state and ends the line. */
    finish() {
      draw();
      write('\n');
    },
  };
}
