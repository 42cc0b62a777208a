// Run before each Node test file (vitest's setupFiles). The files of the `node` project share their
// modules (isolate off), so what the test fixtures keep on globalThis (the calls they recorded,
// handlers made to fail, held waits) would carry over from the file before: each file starts with
// it empty, as it did with modules of its own. A fixture that keeps state keeps it under one of
// these names.
const state = globalThis as Record<string, unknown>;

/** Arrays and maps a fixture module holds on to: emptied in place. */
for (const name of ['__podhookOrdered', '__podhookStepNotes', '__podhookWaitNotes', '__podhookWaitHolds']) {
  const kept = state[name];
  if (kept instanceof Map) kept.clear();
  else if (Array.isArray(kept)) kept.splice(0);
}
const recording = state.__podhookRecording as { calls: unknown[]; failing: Set<string> } | undefined;
recording?.calls.splice(0);
recording?.failing.clear();
/** Read afresh on each call: set by the file that wants it. */
delete state.__leakySecrets;
