import { spawnSync } from 'node:child_process';

/**
 * Runs each variant of an in-process bench script in a fresh process (`node --import tsx SCRIPT
 * --child VARIANT COUNT`), round after round, the order rotating; each child prints a JSON line
 * with `us_per_delivery`. Resolves every round's figures by variant, and prints each round.
 */
export function variantRounds<V extends string>(script: string, variants: readonly V[], rounds: number, count: number): Record<V, number[]> {
  const figures = Object.fromEntries(variants.map((v) => [v, [] as number[]])) as Record<V, number[]>;
  for (let round = 0; round < rounds; round++) {
    const order = variants.map((_, i) => variants[(i + round) % variants.length]!);
    for (const variant of order) {
      const out = spawnSync(process.execPath, ['--import', 'tsx', script, '--child', variant, String(count)], { encoding: 'utf8' });
      if (out.status !== 0) throw new Error(`${variant}: ${out.stderr}`);
      figures[variant].push((JSON.parse(out.stdout.trim().split('\n').at(-1)!) as { us_per_delivery: number }).us_per_delivery);
    }
    process.stderr.write(`round ${round + 1}/${rounds}: ${variants.map((v) => `${v} ${figures[v].at(-1)!.toFixed(1)} µs`).join(', ')}\n`);
  }
  return figures;
}

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * One variant's figure, in the process variantRounds started: `run(n)` sends n deliveries and
 * waits for their handlers; 3,000 first as a warm-up (JIT, page cache), then `count` timed by
 * this process's CPU. `close` ends the runtime; the figure goes to stdout as variantRounds reads it.
 */
export async function measureVariant(variant: string, count: number, run: (n: number) => Promise<void>, close: () => Promise<void>): Promise<void> {
  await run(3000);
  const before = process.cpuUsage();
  await run(count);
  const { user, system } = process.cpuUsage(before);
  await close();
  process.stdout.write(`${JSON.stringify({ variant, us_per_delivery: (user + system) / count })}\n`);
}
