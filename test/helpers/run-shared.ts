// One resource per vitest run, whichever projects name the global setup that makes it. Two Node
// projects (test files that share their modules, and those that need their own) both list the
// PostgreSQL server and the podhook build; vitest calls each project's global setup, in the one
// main process, so the first call starts the resource and the others wait for it and share it.
// It stops when the last of them tears down.

interface Entry {
  value: Promise<unknown>;
  users: number;
  stop: () => Promise<void>;
}

const KEY = Symbol.for('podhook.test.run-shared');
const shared = ((globalThis as Record<symbol, unknown>)[KEY] ??= new Map<string, Entry>()) as Map<string, Entry>;

/**
 * The run's one `name`: started with `start` by the first caller. Resolves with its value and a
 * release; the resource's own stop runs when every caller has released it.
 */
export async function runShared<T>(name: string, start: () => Promise<{ value: T; stop: () => Promise<void> | void }>): Promise<{ value: T; release: () => Promise<void> }> {
  let entry = shared.get(name);
  if (!entry) {
    const started = start();
    entry = { value: started.then((s) => s.value), users: 0, stop: async () => void (await (await started).stop()) };
    shared.set(name, entry);
    // A start that failed is not kept: the next caller tries again (and fails the same way, saying why).
    started.catch(() => shared.get(name) === entry && shared.delete(name));
  }
  const mine = entry;
  mine.users += 1;
  const value = (await mine.value) as T;
  let released = false;
  return {
    value,
    async release() {
      if (released) return;
      released = true;
      mine.users -= 1;
      if (mine.users > 0) return;
      if (shared.get(name) === mine) shared.delete(name);
      await mine.stop();
    },
  };
}
