/** Milliseconds since the epoch. Injected everywhere "now" matters so edges are tested exactly. */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();
