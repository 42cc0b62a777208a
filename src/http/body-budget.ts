import { UnavailableError } from '../core/errors.js';

/** Body bytes being read at once across all requests: what unfinished bodies can hold in memory. */
export interface BodyBudget {
  /** Takes `bytes` from the budget; false (nothing taken) when that would go over it. */
  take(bytes: number): boolean;
  give(bytes: number): void;
  available(): number;
}

export function createBodyBudget(maxBytes: number): BodyBudget {
  let used = 0;
  return {
    take(bytes) {
      if (used + bytes > maxBytes) return false;
      used += bytes;
      return true;
    },
    give(bytes) {
      used = Math.max(0, used - bytes);
    },
    available: () => maxBytes - used,
  };
}

/** 503 when the budget is spent: the sender retries shortly. */
export function budgetSpentError(): UnavailableError {
  return new UnavailableError('The receiver is reading too many request bodies at once; retry shortly.', 'body_budget_spent', { retryAfterSeconds: 2 });
}
