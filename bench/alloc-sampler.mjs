// Preloaded into a bench target by bench/profile.ts --alloc (`node --import ./bench/alloc-sampler.mjs`):
// V8's sampling heap profiler, toggled by SIGUSR2. The first signal starts sampling, the second
// writes ALLOC_PROFILE (a .heapprofile: open it in Chrome DevTools' Memory tab) and stops.
// ALLOC_COLLECTED=1 keeps the objects the garbage collector freed meanwhile: what was allocated,
// by call site; =major keeps only those a mark-compact freed: what outlived the scavenges (was
// promoted to the old generation) or is still alive; without it, only what is still alive at
// the second signal: what is retained.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

const session = new Session();
session.connect();
const post = (method, params = {}) =>
  new Promise((resolve, reject) => session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))));
const collected = process.env.ALLOC_COLLECTED;
let sampling = false;
process.on('SIGUSR2', () => {
  void (async () => {
    if (!sampling) {
      sampling = true;
      await post('HeapProfiler.enable');
      await post('HeapProfiler.startSampling', {
        samplingInterval: Number(process.env.ALLOC_INTERVAL ?? 16384),
        includeObjectsCollectedByMajorGC: collected === '1' || collected === 'major',
        includeObjectsCollectedByMinorGC: collected === '1',
      });
      return;
    }
    const { profile } = await post('HeapProfiler.getSamplingProfile');
    await post('HeapProfiler.stopSampling');
    sampling = false;
    writeFileSync(process.env.ALLOC_PROFILE, JSON.stringify(profile));
  })();
});
