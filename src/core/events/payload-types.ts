import type { z } from 'zod';
import type { EventType } from './event-types.js';

/**
 * The payload type of each event type, as the generated module (`podhook schemas`,
 * `handlers/_payloads.ts`) declares it by module augmentation:
 * `declare module 'podhook' { interface PayloadTypes { 'pod.created': PodCreatedPayload } }`.
 * Empty while no such module is part of the program.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled by augmentation
export interface PayloadTypes {}

/** The payload type of `T` the generated module declares, else any JSON object (as without it). */
export type LearnedPayload<T extends EventType> = T extends keyof PayloadTypes ? PayloadTypes[T] : Record<string, unknown>;

/** What a generated module's `payloadSchemas` satisfies: one zod schema per event type, parsing to its payload type. */
export type PayloadSchemas = { readonly [T in EventType]: z.ZodType<LearnedPayload<T>> };
