// The checks the multi-replica tests make on the replica-handlers fixture's record: they must be
// able to fail, so here they are given overlapping, unfinished and missing runs.
import { describe, expect, it } from 'vitest';
import type { RunLine } from '../fixtures/replica-handlers.js';
import { missingCompletions, overlappingRuns, runIntervals } from '../helpers/replicas.js';

const line = (pid: number, phase: RunLine['phase'], at: number, id = 'e1', handler = 'noteAll'): RunLine => ({ handler, id, pid, phase, at });

describe('the record of handler runs across replicas', () => {
  it('finds two processes running one handler on one event at once, and not runs one after the other', () => {
    const apart = runIntervals([line(1, 'start', 10), line(1, 'end', 20), line(2, 'start', 20), line(2, 'end', 30)]);
    expect(overlappingRuns(apart)).toEqual([]);
    const together = runIntervals([line(1, 'start', 10), line(2, 'start', 15), line(1, 'end', 20), line(2, 'end', 30)]);
    expect(overlappingRuns(together)).toEqual(['noteAll e1: pid 1 [10, 20] and pid 2 [15, 30]']);
    // Other handlers or events at the same time are no overlap.
    expect(overlappingRuns(runIntervals([line(1, 'start', 10), line(2, 'start', 11, 'e2'), line(3, 'start', 12, 'e1', 'noteCreated')]))).toEqual([]);
  });

  it('ends an unfinished run at its process kill, and leaves one on a live process open', () => {
    const lines = [line(1, 'start', 10), line(2, 'start', 40), line(2, 'end', 50)];
    const runs = runIntervals(lines, new Map([[1, 30]]));
    expect(runs.find((r) => r.pid === 1)).toMatchObject({ end: 30, completed: false });
    expect(overlappingRuns(runs)).toEqual([]);
    // Killed after the other process started: an overlap.
    expect(overlappingRuns(runIntervals(lines, new Map([[1, 45]])))).toHaveLength(1);
    expect(runIntervals(lines).find((r) => r.pid === 1)!.end).toBe(Infinity);
  });

  it('names each stored delivery whose handler never completed (aborted and cut-off runs do not count)', () => {
    const runs = runIntervals([line(1, 'start', 1), line(1, 'end', 2), line(1, 'start', 3, 'e1', 'noteCreated'), line(1, 'aborted', 4, 'e1', 'noteCreated')]);
    expect(missingCompletions([{ event_id: 'e1' }, { event_id: 'e2' }], runs)).toEqual(['noteCreated e1', 'noteAll e2', 'noteCreated e2']);
  });
});
