import type { z } from 'zod';
import type { EventType } from './event-types.js';

/**
 * The payload type of each event type, as the generated module (`podhook schemas`,
 * `handlers/_payloads.ts`) declares it by module augmentation for the types it learned:
 * `declare module 'podhook' { interface PayloadTypes { 'pod.created': PodCreatedPayload } }`.
 * Empty while no such module is part of the program.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled by augmentation
export interface PayloadTypes {}

/** The payload type of `T` the generated module declares, else any JSON object (as without it). */
export type LearnedPayload<T extends EventType> = T extends keyof PayloadTypes ? PayloadTypes[T] : Record<string, unknown>;

/** What a generated module's `payloadSchemas` satisfies: one zod schema per event type, parsing to its payload type. */
export type PayloadSchemas = { readonly [T in EventType]: z.ZodType<LearnedPayload<T>> };

/** Where a field is in a payload: its keys from the root, `['pod', 'id']`. */
export type FieldPath = readonly string[];

/** Where the fields podhook reads itself are, in one event type's payloads. */
export interface EventFields {
  /** The pod the event is about: a uuid string present in every sample. */
  readonly podId?: FieldPath;
  /** When the sender says the event happened: an RFC 3339 date-time string present in every sample. */
  readonly occurredAt?: FieldPath;
}

/**
 * What a generated module's `payloadFields` satisfies: per event type, where its pod id and event
 * time are, found by `podhook schemas` from the learned shapes (rules: docs/handlers.md). A type
 * absent, or a field absent from its entry, has no such place in every sample.
 */
export type PayloadFields = { readonly [T in EventType]?: EventFields };
