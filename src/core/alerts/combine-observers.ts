import type { DispatchObserver } from '../dispatch/dispatcher.js';

/** One observer that calls each given observer in turn (metrics and alerts both watch the dispatcher). */
export function combineObservers(...observers: readonly DispatchObserver[]): DispatchObserver {
  return {
    handlerStarted: (...args) => observers.forEach((o) => o.handlerStarted?.(...args)),
    handlerFinished: (...args) => observers.forEach((o) => o.handlerFinished?.(...args)),
    deliveryFinished: (...args) => observers.forEach((o) => o.deliveryFinished?.(...args)),
    leaseLost: (...args) => observers.forEach((o) => o.leaseLost?.(...args)),
    orderStale: (...args) => observers.forEach((o) => o.orderStale?.(...args)),
  };
}
