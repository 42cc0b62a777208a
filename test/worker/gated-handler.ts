import { defineHandler, type EventPattern, type HandlerDefinition } from '../../src/core/events/define-handler.js';

/** A handler that notes each event it starts and then waits until the test releases it. */
export function gatedHandler(eventType: EventPattern): { handler: HandlerDefinition; started: string[]; release(): void } {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const started: string[] = [];
  const handler = defineHandler(eventType, async function slow(event) {
    started.push(event.id);
    await gate;
  });
  return { handler, started, release };
}
