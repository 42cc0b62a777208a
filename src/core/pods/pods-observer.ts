import type { BucketName } from '../limits/bucket-size.js';

/** The pod client's operations, as metrics and logs name them. */
export type PodsOperation = 'list' | 'queueAction' | 'actions' | 'mintKey' | 'chatTicket';

/** One request the client sent and how it ended. */
export interface PodsCallEvent {
  operation: PodsOperation;
  bucket: BucketName;
  /** `ok`, or the error's code (`rate_limited`, `internal`, `network_error`, …). */
  code: string;
  /** The HTTP status; 0 when no answer came. */
  status: number;
  requestId: string;
  durationMs: number;
}

/** Time a call spent waiting before it was sent: for a token of its bucket, or after a `429`. */
export interface PodsWaitEvent {
  operation: PodsOperation;
  bucket: BucketName;
  waitedMs: number;
}

/**
 * What the pod client reports as it works, for metrics (`podhook_pods_calls_total{operation,code}`,
 * time waited per bucket) and logs. Never given the API key.
 */
export interface PodsObserver {
  call?(event: PodsCallEvent): void;
  wait?(event: PodsWaitEvent): void;
}
