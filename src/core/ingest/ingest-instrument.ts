import type { ClaimResult, NewDelivery, QuarantineResult } from '../delivery.js';
import type { IngestOutcome } from './ingest-outcome.js';

type Claim = (delivery: NewDelivery) => Promise<ClaimResult>;
type Quarantine = (delivery: NewDelivery, alternateId: string) => Promise<QuarantineResult>;
type OnOutcome = (outcome: IngestOutcome) => void;

/**
 * What watches ingest (tracing does): each member takes one of ingest's steps and gives it back
 * wrapped. The counterpart of dispatch's `DispatchInstrument`: the runtime composes what it is
 * given and wraps nothing when it is given none.
 */
export interface IngestInstrument {
  /** The whole request (a SERVER span per ingest request, active while it runs). */
  request?<Q, A extends { status: number }>(ingest: (request: Q) => Promise<A>, route: string): (request: Q) => Promise<A>;
  /** Each ingest outcome (event id and type, how it ended), then `next`. */
  outcome?(next?: OnOutcome): OnOutcome;
  /** The store commit of a new delivery. */
  claim?(claim: Claim): Claim;
  /** The quarantine of a conflict. */
  quarantine?(quarantine: Quarantine): Quarantine;
}

/** Ingest's steps with every instrument's wrapper on, the first instrument innermost: the steps themselves when none wraps them. */
export function instrumentIngest(
  instruments: readonly IngestInstrument[],
  steps: { claim: Claim; quarantine: Quarantine; onOutcome?: OnOutcome },
): { claim: Claim; quarantine: Quarantine; onOutcome?: OnOutcome; request<Q, A extends { status: number }>(ingest: (request: Q) => Promise<A>, route: string): (request: Q) => Promise<A> } {
  let { claim, quarantine, onOutcome } = steps;
  for (const i of instruments) {
    if (i.claim) claim = i.claim(claim);
    if (i.quarantine) quarantine = i.quarantine(quarantine);
    if (i.outcome) onOutcome = i.outcome(onOutcome);
  }
  return {
    claim,
    quarantine,
    onOutcome,
    request: (ingest, route) => instruments.reduce((wrapped, i) => i.request?.(wrapped, route) ?? wrapped, ingest),
  };
}
