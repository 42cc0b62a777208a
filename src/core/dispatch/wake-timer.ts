import type { Clock } from '../clock.js';

export interface WakeTimer {
  /** Asks for a wake at `at` (epoch ms; now or earlier: at once). Only the earliest pending one is kept. */
  at(at: number): void;
  clear(): void;
}

/** One timer for the earliest wake asked for at a later time; unref'd, so it never keeps a process alive. */
export function createWakeTimer({ clock, wake }: { clock: Clock; wake: () => void }): WakeTimer {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let timerAt = Infinity;
  return {
    at(at) {
      const delay = at - clock();
      if (delay <= 0) return wake();
      if (at >= timerAt) return;
      clearTimeout(timer);
      timerAt = at;
      timer = setTimeout(() => {
        timerAt = Infinity;
        wake();
      }, delay);
      (timer as { unref?: () => void }).unref?.();
    },
    clear() {
      clearTimeout(timer);
      timerAt = Infinity;
    },
  };
}
